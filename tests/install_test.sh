#!/usr/bin/env bash
# mwbench as an installed tool: `cmake --install` into a scratch prefix (binary, suites, manual
# page), the installed binary finding a suite by name through PREFIX/share/mwbench/configs from
# another directory, the manual page rendering without a warning and documenting every option
# --help shows, and the .deb cpack builds (its files, the library packages it depends on).
#   install_test.sh BUILD_DIR SOURCE_DIR
set -u
build="$(cd "$1" && pwd)"
src="$(cd "$2" && pwd)"
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh"
unset MWBENCH_CONFIGS
prefix="$work/prefix"
has() {  # has NAME FILE: the file exists and is not empty
  if [ -s "$2" ]; then ok; else bad "$1: $2 is missing or empty"; fi
}

cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  bad "cmake --install: $(cat "$work/install.log")"
bin="$prefix/bin/mwbench"
has "the binary" "$bin"
for f in "$src"/configs/*.toml; do has "the suite $(basename "$f")" "$prefix/share/mwbench/configs/${f##*/}"; done
# gzipped, as Debian ships manual pages (lintian: uncompressed-manual-page); the checks below read it
gz="$prefix/share/man/man1/mwbench.1.gz"
has "the manual page, gzipped" "$gz"
if [ -e "$prefix/share/man/man1/mwbench.1" ]; then bad "an uncompressed manual page was installed too"; else ok; fi
man="$work/mwbench.1"
if gzip -t "$gz" 2>/dev/null && gzip -dc "$gz" >"$man"; then ok; else bad "$gz is not gzip data"; fi
has "the README" "$prefix/share/doc/mwbench/README.md"
# The docs keep the source tree's layout, so that the links between the pages resolve there too.
doc="$prefix/share/doc/mwbench"
for page in CONTRIBUTING.md docs/guide/running.md docs/reference/exit-codes.md docs/measurements/README.md \
  adapters/redis/README.md results.md; do
  has "the docs: $page" "$doc/$page"
done
mapfile -t pages < <(cd "$doc" && find . -name '*.md' ! -name results.md | sed 's|^\./||' | sort)
n_src=$(cd "$src" && { ls README.md CONTRIBUTING.md adapters/*/README.md; find docs -name '*.md'; } | wc -l)
if [ "${#pages[@]}" -eq "$n_src" ]; then ok; else bad "the docs: ${#pages[@]} pages installed, $n_src in the tree"; fi
if out=$(python3 "$src/tests/doc_links.py" "$doc" "${pages[@]}"); then ok; else bad "the installed docs' links: $out"; fi
if [ -z "$(find "$doc/adapters" -type d -empty)" ]; then ok; else bad "empty folders under $doc/adapters"; fi
[ -x "$build/mwbench-pagecache" ] && has "the page-cache layer beside mwbench" "$prefix/bin/mwbench-pagecache"

# The manual page: man(7) structure, no groff warning, and every option --help shows.
for section in NAME SYNOPSIS DESCRIPTION COMMANDS "COMMON OPTIONS" "OUTPUT OPTIONS" ADAPTERS "EXIT STATUS" FILES \
  EXAMPLES; do
  if grep -qx "\.SH \"\?$section\"\?" "$man"; then ok; else bad "manual page: no section $section"; fi
done
if command -v groff >/dev/null; then
  warnings="$(groff -man -Tutf8 -ww -z "$man" 2>&1)"
  if [ -z "$warnings" ]; then ok; else bad "groff warns about the manual page: $warnings"; fi
fi
if command -v man >/dev/null; then
  check "man -l renders the installed page" 0 "mwbench run \[SUITE \.\.\.\]" -- env MANWIDTH=100 man -l "$gz"
fi
# every request is a known man(7) macro: no help text became a request
if grep -E '^[.'"'"']' "$man" | grep -vqE '^\.(TH|SH|SS|PP|TP|B|I|br|nf|fi|RS|RE)( |$)'; then
  bad "manual page: a line that is not a man(7) request: $(grep -E '^[.'"'"']' "$man" |
    grep -vE '^\.(TH|SH|SS|PP|TP|B|I|br|nf|fi|RS|RE)( |$)' | head -3)"
else
  ok
fi
# An option's line starts "  -c, --name" or "      --name"; a wrapped description's "(also --alias)" does not.
for cmd in $("$bin" list | awk '/^[a-z]/ && $2 != "not" {print $1}') run compare report merge model; do
  grep -qF "mwbench $cmd" "$man" || { bad "manual page: no section for $cmd"; continue; }
  for opt in $("$bin" "$cmd" --help | grep -oE -- '^  (-[A-Za-z], |    )--[a-z][a-z0-9-]*' | grep -oE -- '--.*'); do
    if grep -qF -- "\\fB$(sed 's/-/\\-/g' <<<"$opt")\\fR" "$man"; then ok; else bad "manual page: $cmd's $opt"; fi
  done
done

# A suite by name, from a directory with no configs/: found only in PREFIX/share/mwbench/configs.
mkdir -p "$work/elsewhere"
cd "$work/elsewhere" || exit 2
name="installed-only-$$"
printf '[suite]\nname = "%s"\n[[job]]\nadapter = "null"\nn = 1000\nname = "installed suite ran"\n' "$name" \
  >"$prefix/share/mwbench/configs/$name.toml"
check "a suite by name from the install" 0 "^installed suite ran -: [0-9.]+ requests per second$" -- \
  "$bin" run "$name" -q --no-save
check "a suite by name.toml" 0 "^installed suite ran -: " -- "$bin" run "$name.toml" -q --no-save
check "an unknown suite names the suites and where it looked" 2 \
  "mwbench run: no suite 'no-such': not a file, and no no-such.toml in .*$prefix/share/mwbench/configs.*; \
suites found: .*vm-sanity" \
  -- "$bin" run no-such --no-save
check "an installed suite loads" 2 "no suite 'no-such'" -- "$bin" run vm-sanity no-such --no-save
check "a path is a path" 2 "\./$name: cannot read the suite file" -- "$bin" run "./$name" --no-save
cd "$work" || exit 2

# The .deb: its files, and Depends computed by dpkg-shlibdeps from the libraries linked.
if command -v dpkg-deb >/dev/null && command -v dpkg-shlibdeps >/dev/null; then
  (cd "$build" && cpack -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1) || bad "cpack: $(tail -20 "$work/cpack.log")"
  deb="$(ls "$work"/deb/mwbench_*.deb 2>/dev/null | head -1)"
  if [ -n "$deb" ]; then
    check "deb: Package" 0 "^mwbench$" -- dpkg-deb -f "$deb" Package
    # every library the binary links (NEEDED), by the package that holds it, with a version
    depends="$(dpkg-deb -f "$deb" Depends)"
    for so in $(objdump -p "$bin" | awk '/NEEDED/ {print $2}'); do
      path="$(ldd "$bin" | awk -v so="$so" '$1 == so {print $3}')"
      pkg="$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null)"
      pkg="${pkg%%:*}"
      if [ -n "$pkg" ] && [[ ", $depends" == *", $pkg (>= "* ]]; then ok; else
        bad "deb: Depends lacks $so (${pkg:-no package found}): $depends"
      fi
    done
    check "deb: Depends on the libraries" 0 "libsqlite3-0 .*libtokyocabinet9" -- dpkg-deb -f "$deb" Depends
    check "deb: Recommends the servers" 0 "gearman-job-server.*memcached.*redis-server" -- dpkg-deb -f "$deb" Recommends
    check "deb: Maintainer" 0 "@" -- dpkg-deb -f "$deb" Maintainer
    for f in ./usr/bin/mwbench ./usr/share/man/man1/mwbench.1.gz ./usr/share/mwbench/configs/vm-sanity.toml; do
      check "deb holds $f" 0 " $f\$" -- dpkg-deb -c "$deb"
    done
  else
    bad "cpack wrote no .deb: $(tail -20 "$work/cpack.log")"
  fi
fi
finish install
