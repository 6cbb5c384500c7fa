#!/usr/bin/env python3
"""Every relative link of the given Markdown pages resolves: its file (or folder) exists under ROOT,
and its #anchor is a heading of the page it names (GitHub's slugs). Links in code are not links.
  doc_links.py ROOT PAGE...   (PAGE relative to ROOT; prints each broken link, exit 1 if any)"""
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """(line number, line) of the lines outside fenced code, inline code spans blanked."""
    fenced = False
    for n, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor of a heading: its text, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        fenced = False
        for line in open(path, encoding="utf-8").read().split("\n"):
            if FENCE.match(line):
                fenced = not fenced
                continue
            m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                k = seen.get(base, 0)
                seen[base] = k + 1
                found.add(base if k == 0 else f"{base}-{k}")
        cache[path] = found
    return cache[path]


def main():
    root, pages = sys.argv[1], sys.argv[2:]
    bad = checked = 0
    for page in pages:
        path = os.path.join(root, page)
        for n, line in prose_lines(open(path, encoding="utf-8").read()):
            for m in LINK.finditer(line):
                target = m.group(1)
                if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                    continue
                checked += 1
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
                why = ""
                if not os.path.realpath(dest).startswith(os.path.realpath(root) + os.sep):
                    why = "outside the tree"
                elif not os.path.exists(dest):
                    why = "no such file"
                elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
                    why = f"no heading #{anchor} in {os.path.relpath(dest, root)}"
                if why:
                    print(f"{page}:{n}: ({target}): {why}")
                    bad += 1
    print(f"links: {checked} relative links in {len(pages)} pages, {bad} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
