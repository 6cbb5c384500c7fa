#!/usr/bin/env bash
# The command line as a user meets it: exit codes, clear errors, output formats, result files.
set -u
bin="$1"
src="$2"
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh"

check "null runs, exit 0" 0 "null nop +- +100000 +1 +1" -- "$bin" null -n 100000 --no-save
check "failures exit 1 and say so" 1 "FAILED: null nop on -: 10 of 100 ops failed" -- "$bin" null -n 100 --fail-every 10 --no-save
check "failures are loud" 1 "SOME OPERATIONS FAILED" -- "$bin" null -n 100 --fail-every 10 --no-save
check "unknown option" 2 "^mwbench null: Option .bogus. does not exist; accepted: .*--fail-every.* \(see mwbench null --help\)$" -- "$bin" null --bogus --no-save
check "unknown run option" 2 "^mwbench run: Option .bogus. does not exist; accepted: .*--baseline.* \(see mwbench run --help\)$" -- "$bin" run --bogus
check "unknown report option" 2 "^mwbench report: Option .bogus. does not exist; accepted: .*--html, .*--svg" -- "$bin" report --bogus
check "unknown merge option" 2 "^mwbench merge: Option .bogus. does not exist; accepted: .*--json" -- "$bin" merge --bogus
# a positional argument's name (decide's commands, model's trace) is not an option to offer
check "unknown decide option" 2 "^mwbench decide: Option .bogus. does not exist; accepted: --baseline, --expect, .*--timeout \(see mwbench decide --help\)$" -- "$bin" decide --bogus
check "unknown model option" 2 "^mwbench model: Option .bogus. does not exist; accepted: --force, --help, --json, --max-keys, --name, --skip-bad, --trace-format \(see mwbench model --help\)$" -- "$bin" model --bogus
check "unknown command" 2 "unknown command 'nosuch'" -- "$bin" nosuch
check "bad value" 2 "mwbench sqlite: --rows: rows expects a whole number" -- "$bin" sqlite --rows lots --no-save
check "bad op" 2 "sqlite has no op 'delete'" -- "$bin" sqlite --ops delete --no-save
check "a queue op a backend lacks" 2 "null has no op 'produce'" -- "$bin" null --ops produce --no-save
check "a native op on a queue backend it lacks" 2 "gearman has no op 'scan'" -- "$bin" gearman --ops scan --no-save
check "missing dir" 2 "SET-UP ERROR: sqlite insert \(/nonexistent\): sqlite: directory /nonexistent does not exist" -- "$bin" sqlite --path /nonexistent --ops insert -n 10 --no-save
check "list" 0 "sqlite +SQLite" -- "$bin" list
if "$bin" list | grep -q '^rabbitmq '; then  # bad input is refused before any broker starts
  check "rabbitmq: unknown queue type" 2 "mwbench rabbitmq: --queue-type: queue-type expects one of classic, quorum, got 'fifo'" -- "$bin" rabbitmq --queue-type fifo --no-save
  check "rabbitmq: prefetch 0" 2 "mwbench rabbitmq: --prefetch: prefetch expects a whole number from 1 to 65535" -- "$bin" rabbitmq --prefetch 0 --no-save
  check "rabbitmq: --cluster with --host" 2 "rabbitmq: --cluster starts its own nodes on 127.0.0.1: drop --host$" -- "$bin" rabbitmq --cluster 3 --queue-type quorum --host 127.0.0.1 --no-save
  check "rabbitmq: --cluster on a classic queue" 2 "rabbitmq: --cluster replicates quorum queues \(a classic queue lives on one node\): add --queue-type quorum$" -- "$bin" rabbitmq --cluster 3 --no-save
  check "rabbitmq: kill-node without a cluster" 2 "--fault kill-node@40%: kill-node needs a cluster: add --cluster 3 --queue-type quorum$" -- "$bin" rabbitmq --ops produce --duration 2s --fault kill-node@40% --no-save
fi
check "queue: a malformed --message-size names it" 2 "^mwbench redis: --message-size: inverted range '1000-100'; expected LO-HI with LO <= HI$" -- "$bin" redis --ops produce --message-size 1000-100 --no-save
check "queue: a --message-size under the header names it" 2 "^mwbench beanstalkd: --message-size: a message is 48 \(its id, stamp and checksum\) to 16777216 bytes \(16M\); '10-100' has a size of 10$" -- "$bin" beanstalkd --message-size 10-100 --no-save
check "beanstalkd: tubes 0" 2 "mwbench beanstalkd: --queues: queues expects a whole number from 1 to 1000" -- "$bin" beanstalkd --queues 0 --no-save
if command -v beanstalkd >/dev/null; then  # refused before the server starts
  check "beanstalkd: fsync interval without a binlog" 2 "beanstalkd: --fsync-ms needs --binlog true" -- "$bin" beanstalkd --fsync-ms 10 --no-save
fi
if "$bin" list | grep -q '^mqtt '; then  # refused before the broker starts
  check "mqtt: QoS 3" 2 "mwbench mqtt: --qos: qos expects a whole number from 0 to 2" -- "$bin" mqtt --qos 3 --no-save
fi
if "$bin" list | grep -q '^nats '; then  # refused before any server starts
  check "nats: unknown storage" 2 "mwbench nats: --storage: storage expects one of file, memory, got 'disk'" -- "$bin" nats --jetstream --storage disk --no-save
  check "nats: a JetStream option without --jetstream" 2 "nats: --storage is a JetStream option: add --jetstream" -- "$bin" nats --storage memory --no-save
  check "nats: produce on core NATS" 2 "produce needs --jetstream" -- "$bin" nats --ops produce --no-save
  check "nats: --replicas without --cluster" 2 "nats: --replicas 3 needs --cluster \(one server holds one copy\)$" -- "$bin" nats --jetstream --replicas 3 --no-save
  check "nats: --replicas above --cluster" 2 "nats: --replicas 5 is above --cluster 3 \(a replica per node at most\)$" -- "$bin" nats --jetstream --cluster 3 --replicas 5 --no-save
  check "nats: --cluster with --host" 2 "nats: --cluster starts its own nodes on 127.0.0.1: drop --host$" -- "$bin" nats --jetstream --cluster 3 --host 127.0.0.1 --no-save
  check "nats: kill-node without a cluster" 2 "--fault kill-node@40%: kill-node needs a cluster: add --jetstream --cluster 3$" -- "$bin" nats --jetstream --ops produce --duration 2s --fault kill-node@40% --no-save
fi
check "help" 0 "mwbench run" -- "$bin" --help
# --help: every summary in one column, whatever the length of an adapter's name (memcached and
# beanstalkd, over 8 characters, pushed theirs one and two columns right); a usage wider than the
# column has its summary on the next line, in the column.
help_columns() {
  awk '/^  mwbench / {
         if (match($0, /\[options\] +/)) { print RSTART + RLENGTH; next }
         if (match(substr($0, 11), /  +/)) print 10 + RSTART + RLENGTH
         next
       }
       /^                    +[^ ]/ { match($0, /^ +/); print RLENGTH + 1 }'
}
cols="$("$bin" --help | help_columns | sort -u)"
if [ "$(wc -l <<<"$cols")" -eq 1 ] && [ "$("$bin" --help | help_columns | wc -l)" -ge 10 ]; then ok
else bad "--help: summaries in $(wc -l <<<"$cols") columns ($(tr '\n' ' ' <<<"$cols")): $("$bin" --help)"; fi
check "csv" 0 "^null nop,null,nop,-,2,1,done,1000,0,0," -- "$bin" null -n 1000 -c 2 --csv --no-save
check "markdown" 0 "^\| null nop \| - \| 1000 \| 1 \| 1 \|" -- "$bin" null -n 1000 --markdown --no-save
check "quiet" 0 "^null nop -: [0-9.]+ requests per second$" -- "$bin" null -n 1000 -q --no-save
lines "quiet: a line a job, nothing else" 2 -- "$bin" null -n 1000 -c 1,2 -q --no-save
check "quiet: a failure's line and its note" 1 "FAILED: null nop on -: 10 of 100 ops failed" -- "$bin" null -n 100 --fail-every 10 -q --no-save
check "bool option with a separate value" 0 "sqlite insert +/dev/shm" -- "$bin" sqlite --path /dev/shm --ops insert -n 10 --keep false --no-save
check "bool option's bad separate value names it" 2 "^mwbench sqlite: --keep: keep expects true or false, got 'maybe'$" -- "$bin" sqlite --path /dev/shm --keep maybe --no-save
lines "bool option's bad separate value: one line" 1 -- "$bin" sqlite --path /dev/shm --keep maybe,true --no-save
# --keep keeps the database, so this one is made in the test's own directory (in /dev/shm, every
# run of the tests left one behind), and is looked for there.
mkdir -p "$work/keep"
check "bool option followed by an option" 0 "sqlite insert +$work/keep" -- "$bin" sqlite --keep --path "$work/keep" --ops insert -n 10 --no-save
if [ "$(find "$work/keep" -name 'mwbench-*.db' | wc -l)" -eq 1 ]; then ok; else bad "--keep: no database kept in $work/keep: $(ls -A "$work/keep")"; fi
check "fio's names for disk" 0 "disk randrw +/dev/shm .* 200 +1 +4 " -- "$bin" disk --path /dev/shm --size 4M --pattern randrw --depth 4 --rwmixread 75 -n 200 --no-save
check "clients list" 0 "null nop clients=4" -- "$bin" null -n 1000 -c 1,4 --no-save
# the shared workload: one job, a load row, per-op figures under it (-v)
check "mix: a load row" 0 "null mix load +- +1000 " -- "$bin" null --mix read:95,update:5 --keyspace 1000 -n 5000 --no-save
check "mix: per-op figures" 0 "^  update: [0-9]+ ops" -- "$bin" null --mix read:95,update:5 --keys zipfian --keyspace 1000 -n 5000 -v --no-save
check "mix: hit ratio" 0 "read: [0-9]+ ops.*0 misses \(hit ratio 100.00%\)" -- "$bin" null --mix read:95,update:5 --keys hotspot --keyspace 1000 -n 5000 -v --no-save
check "mix: no load row without reads" 0 "^null mix +- +5000 " -- "$bin" null --mix insert:1 --keyspace 1000 -n 5000 --no-save
check "mix: unknown op" 2 "mwbench null: --mix: unknown op 'reed'" -- "$bin" null --mix reed:95 --no-save
check "mix: bad weight" 2 "mwbench null: --mix weight of read: expected a whole number" -- "$bin" null --mix read:0 --no-save
check "mix: keyspace 0" 2 "mwbench null: --keyspace" -- "$bin" null --mix read:1 --keyspace 0 --no-save
check "mix: inverted sizes" 2 "mwbench null: --value-size: inverted range '1000-100'" -- "$bin" null --mix read:1 --value-size 1000-100 --no-save
check "mix: with --ops" 2 "give --ops or --mix, not both" -- "$bin" null --mix read:1 --ops nop --no-save
check "mix: keys axis" 0 "null mix keys=zipfian" -- "$bin" null --mix read:1 --keys uniform,zipfian --keyspace 1000 -n 1000 --no-save
lines "hot shift: a bad value is one line" 1 -- "$bin" null --mix read:1 --keys zipfian --hot-shift 5ms --no-save
check "hot shift: a bad value" 2 "^mwbench null: --hot-shift: expected a time from 10ms to 24h \(10s, 500ms\), got '5ms'$" -- "$bin" null --mix read:1 --keys zipfian --hot-shift 5ms --no-save
check "hot shift: keys with no hot set" 2 "^mwbench null: --hot-shift: needs --keys zipfian or hotspot" -- "$bin" null --mix read:1 --hot-shift 1s --no-save
check "hot shift: in the workload description" 0 "hot keys move every 0.2s" -- "$bin" null --mix read:1 --keys hotspot --keyspace 1000 --hot-shift 200ms --duration 300ms -v --no-save
lines "ttl: a bad value is one line" 1 -- "$bin" sqlite --mix read:1 --ttl 400d --no-save
check "ttl: a bad value" 2 "^mwbench sqlite: --ttl: expected whole seconds from 1 to 365d \(3600, 90s, 1h, 2d\), got '400d'$" -- "$bin" sqlite --mix read:1 --ttl 400d --no-save
check "ttl: a store whose keys never expire" 2 "^mwbench sqlite: --ttl: sqlite's keys do not expire" -- "$bin" sqlite --mix read:1 --ttl 1h --no-save
if command -v redis-server >/dev/null; then
  check "redis mix: per-op rows" 0 "^  rmw: [0-9]+ ops" -- "$bin" redis --mix read:70,update:10,delete:10,rmw:10 --keys zipfian --keyspace 1000 -n 5000 -P 8 -v --no-save
  check "redis mix: no scan" 2 "mwbench redis: --mix: redis cannot run 'scan'; it maps read, update, insert, delete, rmw" -- "$bin" redis --mix read:90,scan:10 --no-save
  check "redis: a size range needs --mix" 2 "mwbench redis: --value-size: .*needs --mix" -- "$bin" redis --ops set --value-size 10-100 --no-save
fi
# memcached: a wrong port is a set-up error naming host:port; an op it cannot map names both
mc_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
check "memcached: wrong port" 2 "SET-UP ERROR: memcached get \(127.0.0.1:$mc_port\): memcached 127.0.0.1:$mc_port: cannot connect: Connection refused" -- "$bin" memcached --host 127.0.0.1 --port "$mc_port" --ops get -n 10 --no-save
check "memcached: no scan" 2 "mwbench memcached: --mix: memcached cannot run 'scan'; it maps read, update, insert, delete, rmw" -- "$bin" memcached --mix scan:1 --no-save

# the embedded engines (when built): bad values are one line naming the option, exit 2
if "$bin" list | grep -q '^lmdb '; then
  check "lmdb: bad --sync" 2 "mwbench lmdb: --sync: sync expects one of full, nometasync, nosync, got 'maybe'" -- "$bin" lmdb --sync maybe --no-save
  check "lmdb: --batch 0" 2 "mwbench lmdb: --batch: batch expects a whole number from 1" -- "$bin" lmdb --batch 0 --no-save
  check "lmdb: map too small" 2 "SET-UP ERROR: lmdb put \\(/dev/shm\\): lmdb: --keyspace 1000000 of values up to 100 B needs a map of about 545 MiB, more than --map-size 16 MiB" -- "$bin" lmdb --path /dev/shm --ops put --keyspace 1000000 --map-size 16M -n 10 --no-save
  check "lmdb: runs, verified" 0 "lmdb get +/dev/shm \\(tmpfs\\) +2000 " -- "$bin" lmdb --path /dev/shm --sync nosync --keyspace 2000 -n 2000 --no-save
fi
if "$bin" list | grep -q '^rocksdb '; then
  check "rocksdb: --batch 0" 2 "mwbench rocksdb: --batch: batch expects a whole number from 1" -- "$bin" rocksdb --batch 0 --no-save
  check "rocksdb: bad --sync" 2 "^mwbench rocksdb: --sync: sync expects true or false, got 'maybe'$" -- "$bin" rocksdb --sync maybe --no-save
  check "rocksdb: runs, verified" 0 "rocksdb get +/dev/shm \\(tmpfs\\) +2000 " -- "$bin" rocksdb --path /dev/shm --keyspace 2000 -n 2000 --no-save
fi

printf '[[job]]\nadapter = "null"\nn = 1000\n\n[[job]]\nadapter = "sqlite"\nrowz = 5\n' >bad.toml
check "config error names file:line" 2 "bad.toml:7: unknown option 'rowz' for sqlite" -- "$bin" run bad.toml --no-save
printf '[[job]]\nadapter = "null"\nn = 2000\nclients = [1, 2]\n' >ok.toml
check "suite runs" 0 "null nop clients=2" -- "$bin" run ok.toml --results-dir res --json out.json

# By default a run prints the table and at most one line a job (what went wrong, else what limited
# it), then the run's warnings; -v every note (the profile, the machine); -q and -v together: exit 2.
printf '[[job]]\nadapter = "null"\nn = 300000\nclients = [1, 2, 3]\n\n[[job]]\nadapter = "null"\nname = "flaky"\nn = 1000\nfail_every = 10\n' >glance.toml
"$bin" run glance.toml --no-save --json glance.json >glance.out 2>/dev/null
rc=$?
run_warnings=$(python3 -c "import json; print(len(json.load(open('glance.json'))['context']['warnings']))" 2>/dev/null || echo 99)
n=$(wc -l <glance.out)
under=$((n - 5 - run_warnings))  # the header and 4 rows, the run's warnings
if [ "$rc" -eq 1 ] && [ "$under" -ge 1 ] && [ "$under" -le 4 ] && ! grep -qE '^(profile|episode|contract|stores): |^  ' glance.out &&
  [ "$(grep -c '^FAILED: ' glance.out)" -eq 1 ] &&
  grep -qE '^FAILED: flaky on -: 100 of 1000 ops failed; .*; first: Error: failed on purpose \(--fail-every\)' glance.out; then ok
else bad "default run: the table, then at most a line a job (exit $rc, $n lines, $run_warnings warnings of the run): $(cat glance.out)"; fi
"$bin" run glance.toml --no-save -v >glance-v.out 2>/dev/null
if [ "$(wc -l <glance-v.out)" -gt "$n" ] && grep -q '^profile: null nop clients=1: ' glance-v.out && grep -q '^  Error: failed on purpose' glance-v.out &&
  grep -q 'Release build\|Debug build\|RelWithDebInfo build' glance-v.out; then ok
else bad "-v: the profile, the error samples, the machine: $(cat glance-v.out)"; fi
check "-v: the profile" 0 "^profile: null nop: " -- "$bin" null -n 100000 --verbose --no-save
check "-q and -v: exit 2" 2 "^mwbench null: -q and -v: give one" -- "$bin" null -n 100 -q -v --no-save
check "merge: -q and -v: exit 2" 2 "^mwbench merge: -q and -v: give one" -- "$bin" merge -q -v a.json b.json

# every run is written to the results directory, and an earlier file is never overwritten
"$bin" run ok.toml --results-dir res -q >/dev/null 2>&1
n=$(ls res/*.json | wc -l)
if [ "$n" -eq 2 ] && python3 -c "import json,sys; d=json.load(open('out.json')); assert d['schema_version']==2 and d['jobs'][1]['ops_ok']==2000 and d['jobs'][1]['params']['clients']==2" 2>/dev/null; then
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
# A background job starts with SIGINT ignored: signal only once mwbench catches it (a slow
# start, e.g. under ASan, would otherwise lose the signal), then let it measure a little.
for _ in $(seq 100); do
  cgt="$(awk '/^SigCgt/ {print $2}' "/proc/$pid/status" 2>/dev/null)" || break
  [ -n "$cgt" ] && (((16#$cgt & 2) != 0)) && break
  sleep 0.1
done
sleep 0.5
kill -INT "$pid"
wait "$pid"
rc=$?
if [ "$rc" -eq 130 ] && grep -q "interrupted: null nop" int.out && python3 -c "import json,glob; d=json.load(open(glob.glob('res3/*.json')[0])); assert d['interrupted'] and d['jobs'][0]['ops_ok']>0" 2>/dev/null; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: Ctrl-C (exit $rc)"; cat int.out
fi
# issue 10, class 1: bytes that are not UTF-8 in a job name reach the JSON as U+FFFD and the
# terminal as text; no temp file is left behind
check "name not UTF-8: shown, not obeyed" 0 'bad.*\\x1b\[2J' -- "$bin" null -n 100 --name $'bad\xff\x1b[2J' --results-dir res5
if python3 -c "import json,glob; d=json.load(open(glob.glob('res5/*.json')[0])); assert d['jobs'][0]['name']=='bad\ufffd\x1b[2J'" 2>/dev/null &&
  [ -z "$(ls res5 | grep '\.tmp\.')" ]; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: name not UTF-8: result file"; ls -l res5
fi
# a client that throws in its worker thread: that op fails with the reason, the job reports it, exit 1
check "client throws: a failure with the reason" 1 "Error: client threw an exception: thrown on purpose \(--throw-every\)" -- \
  "$bin" null -n 1000 -c 2 --throw-every 100 --results-dir res6
if python3 -c "import json,glob; d=json.load(open(glob.glob('res6/*.json')[0])); j=d['jobs'][0]; assert j['ops_failed']==2 and j['ops_not_run']>0 and d['exit_code']==1" 2>/dev/null &&
  [ -z "$(ls res6 | grep '\.tmp\.')" ]; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: client throws: result file"; ls -l res6
fi
# class 6: compare shows a run that failed as such
cp res6/*.json failed.json
cp res/"$(ls res | head -1)" good.json
check "compare marks a failed run" 0 "FAILED .* failed.json had failures \(2 failed" -- "$bin" compare good.json failed.json
# class 5: result files mwbench did not write: one line naming the file, exit 2
mkdir -p hostile/dir.json
mkfifo hostile/fifo.json
: >hostile/empty.json
printf 'not json' >hostile/text.json
python3 - hostile <<'PY'
import json, sys, copy
d = json.load(open('good.json'))
def bad(name, f):
    x = copy.deepcopy(d); f(x); json.dump(x, open(sys.argv[1] + '/' + name, 'w'))
bad('bucket.json', lambda x: x['jobs'][0]['histogram']['buckets'].insert(0, [1]))
bad('negative.json', lambda x: x['jobs'][0].__setitem__('ops_ok', -3))
bad('type.json', lambda x: x['jobs'][0]['params'].__setitem__('path', {'a': 1}))
bad('missing.json', lambda x: x['jobs'][0].pop('state'))
bad('context.json', lambda x: x.__setitem__('context', [1]))
bad('huge.json', lambda x: x['jobs'][0].__setitem__('rps', 1e300))
# issue 24 item 11: ops_ok that disagrees with the histogram is refused by every reader, as merge does
bad('ops_ok.json', lambda x: x['jobs'][0].__setitem__('ops_ok', x['jobs'][0]['ops_ok'] + 1))
open(sys.argv[1] + '/deep.json', 'w').write('[' * 100000 + ']' * 100000)
open(sys.argv[1] + '/utf8.json', 'wb').write(b'{"schema_version":1,"jobs":["\xff"]}')
PY
for f in hostile/*; do
  for cmd in compare report merge; do
    extra=()
    [ "$cmd" = report ] && extra=(--html out.html)
    out="$(timeout 10 "$bin" "$cmd" good.json "$f" "${extra[@]}" 2>&1 </dev/null)"
    rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -qE "^mwbench $cmd: $f: " <<<"$out"; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1)); printf 'FAIL: %s %s (exit %s)\n%s\n' "$cmd" "$f" "$rc" "$out"
    fi
  done
done

# merge: runs made by other means into one, exactly
"$bin" null -n 30000 -c 2 --no-save --json m1.json >/dev/null 2>&1
"$bin" null -n 20000 -c 3 --no-save --json m2.json >/dev/null 2>&1
check "merge: one table of both" 0 "^null nop +- +50000 +5 +1 " -- "$bin" merge m1.json m2.json --json merged.json
if python3 - <<'PY'
import json
a, b, m = (json.load(open(f)) for f in ('m1.json', 'm2.json', 'merged.json'))
ja, jb, jm = a['jobs'][0], b['jobs'][0], m['jobs'][0]
assert jm['ops_ok'] == 50000 and jm['params']['clients'] == 5 and jm['params']['n'] == 50000
assert jm['elapsed_s'] == max(ja['elapsed_s'], jb['elapsed_s'])
assert abs(jm['rps'] - 50000 / jm['elapsed_s']) < 1e-6 * jm['rps']
assert sum(c for _, c in jm['histogram']['buckets']) == 50000
assert jm['histogram']['min'] == min(ja['histogram']['min'], jb['histogram']['min'])
assert jm['histogram']['max'] == max(ja['histogram']['max'], jb['histogram']['max'])
assert jm['histogram']['sum'] == ja['histogram']['sum'] + jb['histogram']['sum']
assert [r['clients'] for r in m['ranks']] == [[2], [3]] and m['exit_code'] == 0
PY
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: merge: merged counts and histogram"; fi
"$bin" null -n 100 --fail-every 10 --no-save --json m3.json >/dev/null 2>&1
check "merge: other jobs refused" 2 "^mwbench merge: m3.json: job 1 \(null nop\): option fail-every .* is not \(not set\) as in m1.json: not the same job$" -- "$bin" merge m1.json m3.json
check "merge: needs two files" 2 "give at least 2 result files" -- "$bin" merge m1.json
# issue 24 item 11: the same run twice (the same file, or a copy) is refused, never doubled
check "merge: the same file twice" 2 "^mwbench merge: m1.json is the same run as m1.json \(started .* the same figures\): merging it twice would count it twice$" -- "$bin" merge m1.json m1.json
cp m1.json m1-copy.json
check "merge: a copy of a run" 2 "^mwbench merge: m1-copy.json is the same run as m1.json " -- "$bin" merge m1.json m2.json m1-copy.json
# more clients than open files allow: one clear set-up error before the run, not "timeouts"
check "http -c past ulimit -n" 2 "http -c 300: too many open files \(ulimit -n 256; need about 4 per client" -- bash -c "ulimit -n 256; exec \"\$0\" http --url http://127.0.0.1:9/ -c 300 -n 300 --no-save" "$bin"
check "couchdb -c past ulimit -n" 2 "couchdb -c 300: too many open files \(ulimit -n 256; need about 4 per client" -- bash -c "ulimit -n 256; exec \"\$0\" couchdb --url http://127.0.0.1:9/db -c 300 -n 300 --no-save" "$bin"
check "sqlite -c past ulimit -n" 2 "sqlite -c 2000: too many open files \(ulimit -n 1024; need about 3 per client" -- bash -c "ulimit -n 1024; exec \"\$0\" sqlite --path /dev/shm --ops insert -c 2000 -n 2000 --no-save" "$bin"
check "sqlite queue -c past ulimit -n" 2 "sqlite -c 2001: too many open files \(ulimit -n 1024" -- bash -c "ulimit -n 1024; exec \"\$0\" sqlite --path /dev/shm --ops produce -c 2000 -n 2000 --no-save" "$bin"
check "http --max-body checked" 2 "max-body" -- "$bin" http --url http://127.0.0.1:9/ --max-body 0 -n 1 --no-save
# issue 24 item 10: output targets are checked before anything runs; an input is never overwritten
mkfifo out.fifo
mkdir -p outdir
for opt in --json --html --hdr-log; do
  check "$opt to /dev/full" 2 "^mwbench null: $opt /dev/full: is a character device, not a regular file" -- "$bin" null -n 10 --no-save $opt /dev/full
  check "$opt to a FIFO" 2 "^mwbench null: $opt out.fifo: is a FIFO, not a regular file" -- "$bin" null -n 10 --no-save $opt out.fifo
  check "$opt to a directory" 2 "^mwbench null: $opt outdir: is a directory, not a regular file" -- "$bin" null -n 10 --no-save $opt outdir
  check "$opt in a missing directory" 2 "^mwbench null: $opt /nonexistent/x: its directory /nonexistent does not exist" -- "$bin" null -n 10 --no-save $opt /nonexistent/x
done
[ -p out.fifo ] && ok || bad "the FIFO is still a FIFO"
# a bare suite name is the suite's even beside a file of that name (a result saved as ./quick)
echo '{"schema_version": 2, "jobs": []}' >quick
check "run quick beside a file named quick" 2 "^mwbench run: --json /dev/full: is a character device" -- "$bin" run quick --no-save --json /dev/full
rm -f quick
check "two outputs on one path" 2 "^mwbench null: --html ./same.out: the same file as --json: give each output its own file" -- "$bin" null -n 10 --no-save --json same.out --html ./same.out
[ ! -e same.out ] && ok || bad "nothing written when the outputs clash"
check "--json over the suite" 2 "^mwbench run: --json ok.toml: is an input of this command: it would be overwritten" -- "$bin" run ok.toml --no-save --json ok.toml
mkdir -p named && cp ok.toml named/tiny.toml  # a suite called by its name: the JSON may take that name
check "--json named like the suite" 0 "null nop clients=2" -- env MWBENCH_CONFIGS=named "$bin" run tiny --no-save --json tiny
grep -q '"schema_version"' tiny && ok || bad "--json tiny was not written"
check "--json over the baseline" 2 "^mwbench run: --json m1.json: is an input of this command" -- "$bin" run ok.toml --no-save --baseline m1.json --json m1.json
before=$(cksum <m1.json)
check "report over its input" 2 "^mwbench report: --html m1.json: is an input of this command: it would be overwritten" -- "$bin" report m1.json --html m1.json
check "merge over its input" 2 "^mwbench merge: --json m2.json: is an input of this command" -- "$bin" merge m1.json m2.json --json m2.json
[ "$(cksum <m1.json)" = "$before" ] && ok || bad "an input was overwritten"
# issue 24 item 12: values accepted but meaningless are exit 2 naming the option
check "-n beside --duration" 2 "^mwbench null: --duration: give -n or --duration, not both" -- "$bin" null -n 10 --duration 1s --no-save
check "an SLO share above 100%" 2 "errors=101%': a share of failed ops is at most 100%" -- "$bin" null -n 10 --slo errors=101% --no-save
check "a gate that cannot fail" 2 "^mwbench run: --max-regression expects a percentage below 100%" -- "$bin" run ok.toml --no-save --baseline m1.json --max-regression 1000%

# issue 24 item 9: durability options are checked before the first job, with file:line
printf '[[job]]\nadapter = "null"\nn = 1000\n\n[[job]]\nadapter = "sqlite"\nops = ["insert"]\ncrash = "kill"\ncrash-at = "150%%"\n' >crash.toml
check "a bad crash-at in the second job" 2 "^mwbench run: crash.toml:6: sqlite insert: --crash-at expects a share of the run above 0 and up to 100% \(50%, 0.5\), got '150%'$" -- "$bin" run crash.toml --no-save
"$bin" run crash.toml --no-save 2>/dev/null | grep -q "null nop" && bad "the first job ran before the check" || ok
check "a crash of an op whose writes are not read back" 2 "^mwbench sqlite: --crash: sqlite read-all cannot be crashed: the crash check reads back the writes of insert or a --mix \(give --ops insert\)$" -- "$bin" sqlite --ops insert,read-all --crash kill -n 10 --no-save
printf '[[job]]\nadapter = "null"\nn = 1000\n\n[[job]]\nadapter = "sqlite"\nops = ["insert", "read-all"]\ncrash = "kill"\n' >crash2.toml
check "... in a suite, before the first job, with file:line" 2 "^mwbench run: crash2.toml:[0-9]+: sqlite read-all cannot be crashed" -- "$bin" run crash2.toml --no-save
if "$bin" list | grep -q '^redis '; then
  check "a crash of an external server" 2 "^mwbench redis: --crash: --crash kill kills the server mwbench starts: drop --host" -- "$bin" redis --host 127.0.0.1 --port 9 --ops set --crash kill -n 10 --no-save
fi
if "$bin" list | grep -q '^redis '; then
  check "a fault after the run's end" 2 "^mwbench redis: --fault: restart@3s falls at 3.000 s, after the run's end \(--duration 2.000 s\)$" -- "$bin" redis --ops set --duration 2s --fault restart@3s --no-save
  check "a fault kind the set-up cannot do" 2 "^mwbench redis: --fault: kill-node@40%: redis cannot do kill-node \(it can: kill, restart, stop, slow, cut, kill-primary, switchover\)$" -- "$bin" redis --ops set --duration 2s --fault kill-node@40% --no-save
  check "kill-primary without a replicated set-up" 2 "^SET-UP ERROR: redis set \(none\): redis: --fault kill-primary@40% needs --replicas N and --sentinel \(a replica the Sentinels promote\), or --sentinels$" -- "$bin" redis --ops set --duration 2s --fault kill-primary@40% --no-save
  check "--sentinel without --replicas" 2 "^SET-UP ERROR: redis set \(none\): redis: --sentinel needs --replicas N" -- "$bin" redis --ops set --duration 2s --sentinel --no-save
  check "a signal fault on an external server" 2 "^mwbench redis: --fault: stop@40%/1s signals the server mwbench starts: drop --host" -- "$bin" redis --host 127.0.0.1 --port 9 --ops set --duration 2s --fault stop@40%/1s --no-save
  check "a fault without --duration" 2 "^mwbench redis: --fault: --fault needs --duration" -- "$bin" redis --ops set -n 100 --fault restart@40% --no-save
  check "a fault lasting past the run's end" 2 "^mwbench redis: --fault: cut@40%/2s lasts until 2.800 s, past the run's end \(--duration 2.000 s\): give a shorter FOR or an earlier AT$" -- "$bin" redis --ops set --duration 2s --fault cut@40%/2s --no-save
  check "a restart's FOR past the run's end" 2 "^mwbench redis: --fault: restart@1s/1s lasts until 2.000 s, past the run's end" -- "$bin" redis --ops set --duration 2s --fault restart@1s/1s --no-save
fi
if "$bin" list | grep -q '^memcached '; then
  check "memcached's fault kinds" 2 "^mwbench memcached: --fault: kill@40%: memcached cannot do kill \(it can: slow, cut\)$" -- "$bin" memcached --duration 2s --fault kill@40% --no-save
fi
check "a proxy fault on an adapter without a TCP server" 2 "^mwbench sqlite: --fault: cut@40%/1s: cut needs a TCP server to put mwbench's proxy before, and sqlite has none$" -- "$bin" sqlite --ops insert --duration 2s --fault cut@40%/1s --no-save
check "... nor on null" 2 "^mwbench null: --fault: slow@40%/1s:\+5ms: slow needs a TCP server to put mwbench's proxy before, and null has none$" -- "$bin" null --duration 2s --fault slow@40%/1s:+5ms --no-save
# slow's delay: none, empty, zero, negative, over the 60 s cap
delay_usage="slow needs its delay, :\\+DELAY above 0 and up to 60s \\(slow@40%/5s:\\+5ms\\)"
for bad in "slow@40%/1s|got none" "slow@40%/1s:+|got ':\\+'" "slow@40%/1s:+0ms|got ':\\+0ms'" \
  "slow@40%/1s:+-5ms|got ':\\+-5ms'" "slow@40%/1s:+61s|got ':\\+61s'"; do
  spec="${bad%%|*}"
  check "slow's delay: $spec" 2 "^mwbench null: --fault: ${spec//+/\\+}: $delay_usage, ${bad#*|}$" -- "$bin" null --duration 2s --fault "$spec" --no-save
done
check "--expect durable without --crash" 2 "^mwbench sqlite: --expect durable needs --crash kill" -- "$bin" sqlite --ops insert --expect durable -n 10 --no-save
check "--crash-at without --crash" 2 "^mwbench sqlite: --crash-at 20% needs --crash kill" -- "$bin" sqlite --ops insert --crash-at 20% -n 10 --no-save

# model (issue 43): a trace's model, its file never over an earlier one, and --workload-model
printf 'time,op,key,value_size\n' >empty.csv
check "model: an empty trace" 2 "^mwbench model: empty.csv: an empty trace, no requests in it$" -- "$bin" model empty.csv
lines "model: an empty trace is one line" 1 -- "$bin" model empty.csv
check "model: no trace" 2 "^mwbench model: give a trace file" -- "$bin" model
check "model: a bad line" 2 "^mwbench model: .*example.csv:1: " -- "$bin" model "$src/configs/traces/example.csv" --trace-format twitter
check "model: the example trace" 0 "^keys: +zipf alpha [0-9.]+ by maximum likelihood" -- "$bin" model "$src/configs/traces/example.csv" --json model.json
check "model: never over a file" 2 "^mwbench model: --json: model.json exists: give --force" -- "$bin" model "$src/configs/traces/example.csv" --json model.json
check "model: --force replaces it" 0 "^mix: +read:583333,update:333333,delete:83333 " -- "$bin" model "$src/configs/traces/example.csv" --json model.json --force
check "model: --max-keys" 2 "^mwbench model: --max-keys: expected a whole number from 16 to" -- "$bin" model "$src/configs/traces/example.csv" --max-keys 3
check "--workload-model runs the model" 0 "from model example.csv \\(model.json" -- "$bin" null --workload-model model.json -n 1000 -v --no-save
check "--rate model" 0 "^null mix " -- "$bin" null --workload-model model.json --rate model -n 100 --no-save
printf '[suite]\nname = "m"\n[[job]]\nadapter = "null"\nworkload-model = "model.json"\nn = 100\n' >model-suite.toml
check "--workload-model in a suite" 0 "from model example.csv" -- "$bin" run model-suite.toml -v --no-save
printf '{"mwbench_model": 1, "name": "x", "mix": {"read": 1}, "keys": {"alpha": 9, "working_set": 5}}' >bad-model.json
check "--workload-model: a bad file" 2 "^mwbench null: bad-model.json: keys.alpha: expected a number from 0 to 3, got 9$" -- "$bin" null --workload-model bad-model.json -n 10 --no-save
lines "--workload-model: a bad file is one line" 1 -- "$bin" null --workload-model bad-model.json -n 10 --no-save
check "--rate model without a model" 2 "^mwbench null: --rate: rate model takes the mean rate of --workload-model FILE" -- "$bin" null --mix read:1 --rate model -n 10 --no-save
# issue 44 item 4: --reconnect-every and --connect-rate: a bad value, or an adapter whose clients
# hold no connection (or keep theirs: a queue's), is one line naming the option, exit 2
check "--reconnect-every 0" 2 "^mwbench echo: --reconnect-every: reconnect-every expects a whole number from 1 to" -- "$bin" echo -n 10 --reconnect-every 0 --no-save
lines "... in one line" 1 -- "$bin" echo -n 10 --reconnect-every 0 --no-save
check "--connect-rate 0" 2 "^mwbench echo: --connect-rate: connect-rate expects a number from 0.01 to 1000000, got '0'$" -- "$bin" echo -n 10 --reconnect-every 1 --connect-rate 0 --no-save
check "--connect-rate fast" 2 "^mwbench echo: --connect-rate: connect-rate expects a number from 0.01 to 1000000, got 'fast'$" -- "$bin" echo -n 10 --reconnect-every 1 --connect-rate fast --no-save
check "--connect-rate alone" 2 "^mwbench echo: --connect-rate: it paces the reconnects of --reconnect-every: give both$" -- "$bin" echo -n 10 --connect-rate 5 --no-save
check "--reconnect-every on a store in the process" 2 "^mwbench sqlite: --reconnect-every: sqlite's clients hold no connection to close and open again$" -- "$bin" sqlite -n 10 --reconnect-every 1 --no-save
lines "... in one line" 1 -- "$bin" sqlite -n 10 --reconnect-every 1 --no-save
check "--reconnect-every on the baseline" 2 "^mwbench null: --reconnect-every: null's clients hold no connection" -- "$bin" null -n 10 --reconnect-every 1 --no-save
check "--reconnect-every on http" 2 "^mwbench http: --reconnect-every: http connects inside its requests" -- "$bin" http --url http://127.0.0.1:9/ -n 10 --reconnect-every 1 --no-save
printf '[[job]]\nadapter = "null"\nn = 10\n\n[[job]]\nadapter = "sqlite"\nn = 10\nreconnect-every = 3\n' >reconnect.toml
check "... in a suite, with file:line, before the first job" 2 "^mwbench run: reconnect.toml:8: --reconnect-every: sqlite's clients hold no connection" -- "$bin" run reconnect.toml --no-save
if "$bin" list | grep -q '^redis '; then
  check "--reconnect-every on a queue's op" 2 "^mwbench redis: --reconnect-every: redis produce is a queue's op" -- "$bin" redis --ops produce -n 10 --reconnect-every 1 --no-save
fi
check "--reconnect-every 1: a connection per op, one line under the table" 0 "^connect: echo tcp \(127.0.0.1 \(loopback\)\): 50 new connections \(one every 1 ops\), each open ms mean" -- "$bin" echo -n 50 --reconnect-every 1 --no-save -v

# the default suite loads (it is run in full by the suite test)
check "default suite found" 0 "sqlite read-all" -- env MWBENCH_CONFIGS="$src/configs" "$bin" run --no-save

finish cli
