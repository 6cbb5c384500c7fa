#!/usr/bin/env bash
# Every C++ file of the tree is as clang-format (.clang-format, 120 columns) leaves it.
# usage: format_test.sh SOURCE_DIR
set -euo pipefail
cd "$1"
command -v clang-format >/dev/null || { echo "format: clang-format is missing (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(find src adapters tests fuzz bench -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.inc' \) \
  ! -name stats_expected.inc ! -name decide_expected.inc | sort)
[ "${#files[@]}" -gt 100 ] || { echo "format: found only ${#files[@]} files" >&2; exit 1; }
if ! clang-format --dry-run -Werror --style=file "${files[@]}" 2>/tmp/format_test.$$; then
  grep -E '^[^ ].*: error:' /tmp/format_test.$$ | sed 's/:[0-9]*:[0-9]*: error:.*//' | sort -u | head -n 20 >&2
  echo "format: these files differ from clang-format's output: run clang-format -i on them" >&2
  rm -f /tmp/format_test.$$
  exit 1
fi
rm -f /tmp/format_test.$$
echo "format: ${#files[@]} files as clang-format leaves them"
