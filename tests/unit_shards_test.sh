#!/usr/bin/env bash
# The unit_* CTest tests run the doctest binary in shards, one per test file (tests/CMakeLists.txt).
# This checks that the shards together hold every case of the binary, each exactly once: no case
# is dropped (a file the shards' filters miss) nor run twice. Cases are told apart by file, line
# and name, as `--list-test-cases` with the XML reporter lists them.
#   unit_shards_test.sh UNIT_TESTS COMMON_FILTER SHARD_FILTER...
# COMMON_FILTER (may be empty) applies to the whole run and to every shard (the sanitizer build's
# -tce); each SHARD_FILTER (-sf=...) is one shard.
set -u
bin="$1" common="$2"
shift 2
common_args=()
[ -n "$common" ] && common_args=("$common")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The cases a filter selects, one `file:line name` a line; fails when the binary does.
cases() {
  local out
  out="$("$bin" "${common_args[@]}" "$@" -r=xml --list-test-cases)" || return 1
  grep -o '<TestCase name="[^"]*" filename="[^"]*" line="[0-9]*"' <<<"$out" |
    sed -E 's/^<TestCase name="([^"]*)" filename="([^"]*)" line="([0-9]*)"$/\2:\3 \1/'
}
cases >"$work/all" || { echo "unit_shards: $bin --list-test-cases failed"; exit 1; }
total=$(wc -l <"$work/all")
if [ "$total" -eq 0 ]; then
  echo "unit_shards: $bin lists no test case"
  exit 1
fi
fail=0
: >"$work/shards"
for f in "$@"; do
  cases "$f" >"$work/one" || { echo "unit_shards: $bin $f --list-test-cases failed"; exit 1; }
  if [ ! -s "$work/one" ]; then
    echo "FAIL: shard $f holds no case"
    fail=1
  fi
  cat "$work/one" >>"$work/shards"
done
sort "$work/all" >"$work/all.sorted"
sort "$work/shards" >"$work/shards.sorted"
if ! diff "$work/all.sorted" "$work/shards.sorted" >"$work/diff"; then
  echo "FAIL: the shards do not hold every case exactly once (< in no shard, > in a shard more than once):"
  grep '^[<>]' "$work/diff" | head -50
  fail=1
fi
echo "unit_shards: $# shards, $(wc -l <"$work/shards") cases listed by them, $total in the binary"
[ "$fail" -eq 0 ]
