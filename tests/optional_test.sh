#!/usr/bin/env bash
# Optional adapters (issue 23 item 6): a build configured as if some adapters' packages were
# missing (-DMWBENCH_WITHOUT) leaves them out, says so at configure time and in `mwbench list`,
# refuses them on the command line with the package to install (exit 2), and still runs the rest.
# Usage: optional_test.sh SOURCE_DIR
set -u
src=$1
# Beside build/ in the source tree when it can write there: the same relative paths, so ccache
# (CMakeLists.txt: its base directory is the source tree) serves the Release build's objects.
dir=$(mktemp -d "$src/build-optional.XXXXXX" 2>/dev/null || mktemp -d /tmp/mwbench-optional.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src" -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DMWBENCH_WITHOUT="gearman;disk;couchdb" \
  >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
check "configure names the adapters left out" \
  'grep -q "adapter gearman: not built: libgearman-dev was missing" "$dir/configure.log" &&
   grep -q "adapter disk: not built: liburing-dev was missing" "$dir/configure.log" &&
   grep -q "tests: not built" "$dir/configure.log"'
cmake --build "$dir" --target mwbench -j2 >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log"; exit 1; }
list=$("$dir/mwbench" list 2>&1)
check "list says what was not built" \
  'grep -q "^gearman *not built: libgearman-dev was missing" <<<"$list" &&
   grep -q "^couchdb *not built: libcurl4-openssl-dev libhttp-parser-dev was missing" <<<"$list"'
check "list still has the others" 'grep -q "^redis " <<<"$list" && grep -q "^http " <<<"$list"'
out=$("$dir/mwbench" gearman -n 10 2>&1); rc=$?
check "a left-out adapter is exit 2 naming its package" \
  '[ $rc -eq 2 ] && grep -q "gearman adapter was not built: libgearman-dev was missing" <<<"$out"'
out=$("$dir/mwbench" null -n 1000 --no-save -q 2>&1); rc=$?
check "the rest runs" '[ $rc -eq 0 ]'
[ $fail -eq 0 ] && echo "optional_test: all passed" || echo "optional_test: FAILED"
exit $fail
