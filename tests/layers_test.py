#!/usr/bin/env python3
"""Every #include of src/ and adapters/ names a header of its own folder or of a folder below it.
An adapter's test and fuzz files (adapters/NAME/test_*.cpp, fuzz_*.cpp) are test code, as tests/
and fuzz/ are: they may include every folder and the shared test headers (tests/); the adapter
code beside them keeps the adapters' rule, and no other file may include a test file.

usage: layers_test.py SOURCE_DIR LAYERS_FILE
LAYERS_FILE (written by CMake from the libraries' link lines): "layer: direct dependencies" a line.
The link check (layer_check_<folder>) catches a call into a higher folder; this catches what a link
cannot see: an inline function, a type or a constant from a higher folder's header."""
import os
import re
import sys

src_dir, layers_file = sys.argv[1], sys.argv[2]
direct = {}
for line in open(layers_file, encoding="utf-8"):
    name, _, deps = line.partition(":")
    direct[name.strip()] = deps.split()


def below(layer, seen=None):
    seen = set() if seen is None else seen
    for d in direct.get(layer, []):
        if d not in seen:
            seen.add(d)
            below(d, seen)
    return seen


include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
test_file = re.compile(r"^(test|fuzz)_[^/]*\.cpp$")
errors = []
checked = 0
for layer in direct:
    folder = os.path.join(src_dir, "adapters" if layer == "adapters" else os.path.join("src", layer))
    allowed = below(layer) | {layer}
    for dirpath, _, names in os.walk(folder):
        for name in sorted(names):
            if not name.endswith((".h", ".cpp")):
                continue
            path = os.path.join(dirpath, name)
            is_test = layer == "adapters" and test_file.match(name)
            for number, text in enumerate(open(path, encoding="utf-8"), 1):
                m = include.match(text)
                if not m:
                    continue
                checked += 1
                target = m.group(1).split("/")[0]
                if test_file.match(os.path.basename(m.group(1))):
                    errors.append(f"{os.path.relpath(path, src_dir)}:{number}: \"{m.group(1)}\": a test or fuzz file "
                                  f"is no header")
                elif is_test:
                    if target not in direct and target != "tests":
                        errors.append(f"{os.path.relpath(path, src_dir)}:{number}: \"{m.group(1)}\": not a folder "
                                      f"of src/, adapters/ or tests/ (includes name their folder)")
                elif target not in direct:
                    errors.append(f"{os.path.relpath(path, src_dir)}:{number}: \"{m.group(1)}\": not a folder "
                                  f"of src/ or adapters/ (includes name their folder)")
                elif target not in allowed:
                    errors.append(f"{os.path.relpath(path, src_dir)}:{number}: \"{m.group(1)}\": {layer} may use "
                                  f"only {', '.join(sorted(allowed))}")
for e in errors:
    print(e)
print(f"layers: {checked} includes checked, {len(errors)} across a layer", file=sys.stderr)
sys.exit(1 if errors or checked == 0 else 0)
