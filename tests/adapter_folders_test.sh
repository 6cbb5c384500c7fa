#!/usr/bin/env bash
# Adding an adapter touches its folder and nothing else (CONTRIBUTING.md, "Adding an adapter").
# Every adapter folder (adapters/NAME/ with a README.md) has an adapter.cmake, and the places that
# used to keep hand-made lists of adapters name none: the registry, the build's and the tests' and
# fuzz targets' CMake files, scripts/setup, scripts/fuzz. An adapter is named there by its folder
# (adapters/NAME), its spec function, MWBENCH_WITH_NAME, its tests' and fuzz targets' names
# (unit_NAME, test_NAME, fuzz_NAME), a Debian package its adapter.cmake declares, or its bare name
# (not for names that are ordinary words: null, echo, http, disk). Its test and fuzz files and
# corpora are not left in tests/ or fuzz/ either. Usage: adapter_folders_test.sh SOURCE_DIR
set -u
src=$1
cd "$src" || exit 2
fail=0 names=0 checked=0
bad() {
  printf 'FAIL: %s\n' "$*"
  fail=1
}
places=(adapters/registry.cpp adapters/registry.h CMakeLists.txt cmake/*.cmake tests/CMakeLists.txt fuzz/CMakeLists.txt
  scripts/setup scripts/fuzz scripts/build)
words="null echo http disk"  # names that are ordinary words: matched in their adapter forms only
escape() { sed 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$1"; }

for dir in adapters/*/; do
  dir=${dir%/}
  name=${dir#adapters/}
  if [ ! -f "$dir/adapter.cmake" ]; then
    [ -f "$dir/README.md" ] && bad "$dir has a README.md (an adapter) but no adapter.cmake"
    continue  # a shared piece (adapters/conn)
  fi
  names=$((names + 1))
  grep -Eq "^[[:space:]]*mw_adapter\($name([[:space:]]|\$)" "$dir/adapter.cmake" ||
    bad "$dir/adapter.cmake: no mw_adapter($name ...) call"
  upper=$(tr '[:lower:]' '[:upper:]' <<<"$name")
  forms="adapters/$name\\b|\\b${name}_adapter_spec\\b|MWBENCH_WITH_$upper\\b|\\b(unit|test|fuzz)_$name"
  [[ " $words " == *" $name "* ]] || forms="$forms|\\b$name\\b"
  # Its packages, as scripts/setup reads them (whole names: libpq-dev is not libpq-dev2).
  declared=$(sed -nE 's/^[[:space:]]*(PACKAGES|SERVERS|TOOLS|SERVICES)[[:space:]]+([^#)]*).*/\2/p' "$dir/adapter.cmake")
  for p in $declared; do
    forms="$forms|(^|[^[:alnum:].+-])$(escape "$p")(\$|[^[:alnum:].+-])"
  done
  for place in "${places[@]}"; do
    checked=$((checked + 1))
    while IFS= read -r hit; do
      bad "$place:${hit%%:*}: names the adapter $name (${hit#*:}): it belongs in $dir/"
    done < <(grep -nE -- "$forms" "$place" | cut -c1-160)
  done
  for f in tests/test_"$name"*.cpp fuzz/fuzz_"$name"*.cpp fuzz/corpus/"$name"*; do
    [ -e "$f" ] && bad "$f: the adapter $name's own test or fuzz file belongs in $dir/"
  done
done
[ "$names" -gt 0 ] || bad "no adapter folder found under $src/adapters"
echo "adapter_folders: $names adapters, $checked places checked"
exit $fail
