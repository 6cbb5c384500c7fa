#!/usr/bin/env bash
# The command line as a user meets it: exit codes, clear errors, output formats, result files.
set -u
bin="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
pass=0 fail=0
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

check "null runs, exit 0" 0 "null nop +- +100000 +1 +1" -- "$bin" null -n 100000 --no-save
check "failures exit 1 and say so" 1 "FAILED: null nop on -: 10 of 100 ops failed" -- "$bin" null -n 100 --fail-every 10 --no-save
check "failures are loud" 1 "SOME OPERATIONS FAILED" -- "$bin" null -n 100 --fail-every 10 --no-save
check "unknown option" 2 "mwbench null: Option .bogus. does not exist \(see mwbench null --help\)" -- "$bin" null --bogus --no-save
check "unknown command" 2 "unknown command 'nosuch'" -- "$bin" nosuch
check "bad value" 2 "mwbench sqlite: --rows: rows expects a whole number" -- "$bin" sqlite --rows lots --no-save
check "bad op" 2 "sqlite has no op 'delete'" -- "$bin" sqlite --ops delete --no-save
check "missing dir" 2 "SET-UP ERROR: sqlite insert \(/nonexistent\): sqlite: directory /nonexistent does not exist" -- "$bin" sqlite --path /nonexistent --ops insert -n 10 --no-save
check "list" 0 "sqlite +SQLite" -- "$bin" list
check "help" 0 "mwbench run" -- "$bin" --help
check "csv" 0 "^null nop,null,nop,-,2,1,done,1000,0,0," -- "$bin" null -n 1000 -c 2 --csv --no-save
check "markdown" 0 "^\| null nop \| - \| 1000 \| 1 \| 1 \|" -- "$bin" null -n 1000 --markdown --no-save
check "quiet" 0 "^null nop -: [0-9.]+ requests per second$" -- "$bin" null -n 1000 -q --no-save
check "bool option with a separate value" 0 "sqlite insert +/dev/shm" -- "$bin" sqlite --path /dev/shm --ops insert -n 10 --keep false --no-save
check "fio's names for disk" 0 "disk randrw +/dev/shm .* 200 +1 +4 " -- "$bin" disk --path /dev/shm --size 4M --pattern randrw --depth 4 --rwmixread 75 -n 200 --no-save
check "clients list" 0 "null nop clients=4" -- "$bin" null -n 1000 -c 1,4 --no-save

printf '[[job]]\nadapter = "null"\nn = 1000\n\n[[job]]\nadapter = "sqlite"\nrowz = 5\n' >bad.toml
check "config error names file:line" 2 "bad.toml:7: unknown option 'rowz' for sqlite" -- "$bin" run bad.toml --no-save
printf '[[job]]\nadapter = "null"\nn = 2000\nclients = [1, 2]\n' >ok.toml
check "suite runs" 0 "null nop clients=2" -- "$bin" run ok.toml --results-dir res --json out.json

# every run is written to the results directory, and an earlier file is never overwritten
"$bin" run ok.toml --results-dir res -q >/dev/null 2>&1
n=$(ls res/*.json | wc -l)
if [ "$n" -eq 2 ] && python3 -c "import json,sys; d=json.load(open('out.json')); assert d['schema_version']==1 and d['jobs'][1]['ops_ok']==2000 and d['jobs'][1]['params']['clients']==2" 2>/dev/null; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: result files ($n in res/, out.json checked)"; ls -l res
fi
# partial results are written when a run fails part-way
"$bin" null -n 100 --fail-every 2 --results-dir res2 -q >/dev/null 2>&1
if python3 -c "import json,glob; d=json.load(open(glob.glob('res2/*.json')[0])); assert d['jobs'][0]['ops_failed']==50 and d['exit_code']==1" 2>/dev/null; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: failed run result file"
fi
# Ctrl-C stops the run, prints and writes what was measured
"$bin" null --duration 30s --results-dir res3 >int.out 2>&1 &
pid=$!
sleep 0.5
kill -INT "$pid"
wait "$pid"
rc=$?
if [ "$rc" -eq 130 ] && grep -q "interrupted: null nop" int.out && python3 -c "import json,glob; d=json.load(open(glob.glob('res3/*.json')[0])); assert d['interrupted'] and d['jobs'][0]['ops_ok']>0" 2>/dev/null; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: Ctrl-C (exit $rc)"; cat int.out
fi
# more clients than open files allow: one clear set-up error before the run, not "timeouts"
check "http -c past ulimit -n" 2 "http -c 300: too many open files \(ulimit -n 256; need about 4 per client" -- bash -c "ulimit -n 256; exec \"\$0\" http --url http://127.0.0.1:9/ -c 300 -n 300 --no-save" "$bin"
check "couchdb -c past ulimit -n" 2 "couchdb -c 300: too many open files \(ulimit -n 256; need about 4 per client" -- bash -c "ulimit -n 256; exec \"\$0\" couchdb --url http://127.0.0.1:9/db -c 300 -n 300 --no-save" "$bin"
check "http --max-body checked" 2 "max-body" -- "$bin" http --url http://127.0.0.1:9/ --max-body 0 -n 1 --no-save
# the default suite loads (it is run in full by the suite test)
check "default suite found" 0 "sqlite read-all" -- env MWBENCH_CONFIGS="$src/configs" "$bin" run --no-save

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
