# Shell helpers of the command-line tests (sourced): a scratch directory to run in, pass/fail
# counters, check() and lines(), and the closing line.
#   source "$(dirname "$0")/lib.sh"; ...; finish NAME
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL: %s\n' "$*"; }
check() {  # check NAME EXPECTED_EXIT PATTERN -- command...
  local name="$1" want="$2" pattern="$3"
  shift 4
  local out rc
  out="$("$@" 2>&1)"
  rc=$?
  if [ "$rc" -eq "$want" ] && grep -qE -- "$pattern" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    printf 'FAIL: %s (exit %s, wanted %s; pattern %s)\n%s\n' "$name" "$rc" "$want" "$pattern" "$out"
  fi
}
lines() {  # lines NAME EXPECTED_COUNT -- command...: the output is exactly N lines
  local name="$1" want="$2"
  shift 3
  local n
  n="$("$@" 2>&1 | wc -l)"
  if [ "$n" -eq "$want" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name: $n lines, wanted $want"; fi
}
finish() {  # finish NAME: the summary line; fails the test when a check failed
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
