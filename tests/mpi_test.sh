#!/usr/bin/env bash
# mpirun -n K mwbench ...: several ranks on one machine (as CI can) against a loopback
# redis-server this script starts: merged counts equal the whole run's, one result file with
# every rank's context, set-up errors and managed targets end every rank with exit 2, a rank
# killed mid-run leaves the others to finish and write the result (exit 1); memcached --host
# (a memcached it starts too) runs on two ranks.
set -u
bin="$(readlink -f "$1")"
work="$(mktemp -d)"
redis_pid="" mc_pid=""
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null
  [ -n "$mc_pid" ] && kill "$mc_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL: %s\n' "$*"; [ -f out.txt ] && tail -15 out.txt; }
mpi=(timeout 180 mpirun --allow-run-as-root --oversubscribe)
free_port() { python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }

port=$(free_port)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --logfile "$work/redis.log" &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

# json_check FILE PYTHON: runs PYTHON with `d` the result file
json_check() { python3 -c "import json, sys; d = json.load(open('$1')); $2" 2>&1; }

# 1. Three ranks, three jobs: every count is the whole run's, the histogram holds -n samples.
"${mpi[@]}" -n 3 "$bin" redis --host 127.0.0.1 --port "$port" -n 30000 -c 3 --ops set,get,ping \
  --no-save --json r3.json >out.txt 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok || bad "redis on 3 ranks: exit $rc"
if json_check r3.json "
for j in d['jobs']:
    h = j['histogram']
    assert j['ops_ok'] == 30000 and j['ops_failed'] == 0 and j['ops_not_run'] == 0, j['name']
    assert sum(c for _, c in h['buckets']) == 30000 and j['latency_ns']['count'] == 30000, j['name']
    assert j['params']['clients'] == 3 and j['params']['n'] == 30000, j['params']
    assert h['min'] == j['latency_ns']['min'] and h['max'] == j['latency_ns']['max']
    assert abs(j['rps'] - j['ops_ok'] / j['elapsed_s']) <= 1e-6 * j['rps']
    assert sum(j['per_second']) == 30000
    assert sum(iv['ok'] for iv in j['series']['intervals']) == 30000, j['name']
assert d['jobs'][0]['verify']['checked'] and d['jobs'][0]['verify']['ok'], d['jobs'][0]['verify']
assert [r['rank'] for r in d['ranks']] == [0, 1, 2], d['ranks']
assert all(r['clients'] == [1, 1, 1] and r['host'] and r['cores'] > 0 for r in d['ranks']), d['ranks']
assert d['exit_code'] == 0
"; then ok; else bad "redis on 3 ranks: merged result"; fi
grep -qE "^ranks: 3 of 3 merged in [0-9.]+ ms \([0-9.]+ ms CPU\)" out.txt && ok || bad "redis on 3 ranks: merge line"

# 2. A suite of two jobs on two ranks; the remainder of -n and -c goes to the low rank.
cat >two.toml <<EOF
[suite]
name = "two"
[defaults]
host = "127.0.0.1"
port = $port
n = 10001
clients = 3
[[job]]
adapter = "redis"
ops = ["set", "get"]
EOF
"${mpi[@]}" -n 2 "$bin" run two.toml --no-save --json s2.json >out.txt 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok || bad "suite on 2 ranks: exit $rc"
if json_check s2.json "
assert [j['name'] for j in d['jobs']] == ['redis set', 'redis get']
for j in d['jobs']:
    assert j['ops_ok'] == 10001 and sum(c for _, c in j['histogram']['buckets']) == 10001, j
assert [r['clients'] for r in d['ranks']] == [[2, 2], [1, 1]], d['ranks']
"; then ok; else bad "suite on 2 ranks: merged result"; fi

# 3. The null adapter on three ranks: the driver alone.
"${mpi[@]}" -n 3 "$bin" null -n 300000 -c 4 --no-save --json n3.json >out.txt 2>&1
rc=$?
if [ "$rc" -eq 0 ] && json_check n3.json "
j = d['jobs'][0]
assert j['ops_ok'] == 300000 and sum(c for _, c in j['histogram']['buckets']) == 300000
assert [r['clients'] for r in d['ranks']] == [[2], [1], [1]]
"; then ok; else bad "null on 3 ranks (exit $rc)"; fi

# 3b. SLOs are judged on the merged figures (exit 3), and the time series is every rank's, added up.
"${mpi[@]}" -n 2 "$bin" null -n 200000 -c 2 --interval 10ms --slo 'errors=0,max<1ns' --no-save --json slo.json >out.txt 2>&1
rc=$?
if [ "$rc" -eq 3 ] && json_check slo.json "
j = d['jobs'][0]
assert d['exit_code'] == 3 and j['slo']['passed'] is False, j.get('slo')
assert [v['metric'] for v in j['slo']['violations']] == ['max'], j['slo']
s = j['series']
assert s['interval_s'] == 0.01 and sum(iv['ok'] for iv in s['intervals']) == 200000, s['interval_s']
"; then ok; else bad "slo on 2 ranks (exit $rc)"; fi

# 4. What cannot run on several ranks: exit 2, one line saying why, nothing measured.
expect_2() {  # NAME PATTERN -- args
  local name="$1" pattern="$2"
  shift 3
  "${mpi[@]}" "$@" >out.txt 2>&1
  local rc=$?
  if [ "$rc" -eq 2 ] && grep -qE -- "$pattern" out.txt; then ok; else bad "$name: exit $rc"; fi
}
expect_2 "managed server" "redis set: under mpirun give an external target \(--host\)" -- \
  -n 2 "$bin" redis -n 100 -c 2 --no-save
expect_2 "local files" "sqlite works on this machine's files" -- -n 2 "$bin" sqlite -n 10 -c 2 --no-save
expect_2 "fewer clients than ranks" "-c 2 is fewer than the 3 ranks" -- \
  -n 3 "$bin" redis --host 127.0.0.1 --port "$port" -n 100 -c 2 --no-save
expect_2 "bad option" "Option .bogus. does not exist" -- -n 2 "$bin" null --bogus
closed=$(free_port)
start=$SECONDS
expect_2 "set-up error" "rank 0 \(.*\): redis set: redis 127.0.0.1:$closed: cannot connect.*every rank stops \(exit 2\)" -- \
  -n 2 "$bin" redis --host 127.0.0.1 --port "$closed" -n 100 -c 2 --no-save
[ $((SECONDS - start)) -lt 60 ] && ok || bad "set-up error took $((SECONDS - start)) s"

# 5. Rank 2 killed mid-run (mpirun --enable-recovery keeps the others): they finish, rank 0
# writes the result with what they measured and the lost rank named, and exits 1, within the run
# (6 s), the time a rank takes to be found dead (mwbench's kGraceS, 10 s) and start-up. Open MPI
# 4.1's mpirun --enable-recovery exits 0 whatever its ranks return, so each rank's own exit status
# is read through a shell around it. The kill comes once the measured phase runs (there is no
# warm-up: redis counting the ranks' commands says so), never during start-up or set-up.
commands() { redis-cli -p "$port" info stats 2>/dev/null | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }
start=$SECONDS
"${mpi[@]}" --enable-recovery -n 3 sh -c '"$@"; echo "rank $OMPI_COMM_WORLD_RANK exit $?"' sh \
  "$bin" redis --host 127.0.0.1 --port "$port" --duration 6s -c 3 --ops set,get --no-save --json k3.json >out.txt 2>&1 &
run=$!
victim=""
before=$(commands)
for _ in $(seq 300); do
  for p in $(pgrep -x mwbench); do
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q -- "--port $port --duration" &&
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=2' && victim=$p
  done
  [ -n "$victim" ] && [ "$(commands)" -gt $((before + 1000)) ] && break
  sleep 0.1
done
sleep 1
[ -n "$victim" ] && kill -9 "$victim"
wait "$run"
rc=$?
took=$((SECONDS - start))
grep -q "^rank 0 exit 1$" out.txt && grep -q "^rank 1 exit 1$" out.txt && ok ||
  bad "a rank killed mid-run: ranks 0 and 1 did not exit 1 (mpirun exit $rc)"
[ "$took" -le 45 ] && ok || bad "a rank killed mid-run: took $took s, wanted at most 45 (mpirun exit $rc)"
grep -q "^mwbench: exit 1 (mpirun --enable-recovery exits 0 whatever its ranks return" out.txt && ok ||
  bad "a rank killed mid-run: the exit status said"
if [ -n "$victim" ] && grep -q "mwbench: SOME OPERATIONS FAILED: see the errors column; exit 1" out.txt &&
  json_check k3.json "
j = d['jobs'][0]
assert d['exit_code'] == 1 and j['ops_ok'] > 0 and j['verify']['ok'] is False
assert 'rank 2 stopped answering' in j['verify']['detail'], j['verify']
assert d['jobs'][1]['state'] == 'skipped' and 'rank 2 stopped answering' in d['jobs'][1]['message']
assert [r['rank'] for r in d['ranks']] == [0, 1]
"; then ok; else bad "a rank killed mid-run (victim ${victim:-not found})"; fi

# 6. memcached names its external target (AdapterSpec::target_option "host"): two ranks against
# one memcached this script starts on a free port, every count the whole run's; without --host
# it is refused, the managed memcached being one machine's.
mc_port=$(free_port)
memcached -u "$(id -un)" -l 127.0.0.1 -p "$mc_port" -U 0 -m 64 -t 2 >"$work/memcached.log" 2>&1 &
mc_pid=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $mc_port), 0.2)" 2>/dev/null && break
  sleep 0.1
done
"${mpi[@]}" -n 2 "$bin" memcached --host 127.0.0.1 --port "$mc_port" -n 20000 -c 2 --ops set,get \
  --no-save --json m2.json >out.txt 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok || bad "memcached on 2 ranks: exit $rc"
if json_check m2.json "
assert [j['name'] for j in d['jobs']] == ['memcached set', 'memcached get'], [j['name'] for j in d['jobs']]
for j in d['jobs']:
    assert j['ops_ok'] == 20000 and j['ops_failed'] == 0 and j['ops_not_run'] == 0, j['name']
    assert sum(c for _, c in j['histogram']['buckets']) == 20000, j['name']
    assert j['target'] == '127.0.0.1:$mc_port', j['target']
    assert j['server']['server'] == 'memcached' and j['server']['managed'] == 'no', j['server']
assert [r['rank'] for r in d['ranks']] == [0, 1] and all(r['clients'] == [1, 1] for r in d['ranks']), d['ranks']
assert d['exit_code'] == 0
"; then ok; else bad "memcached on 2 ranks: merged result"; fi
expect_2 "memcached without --host" "memcached set: under mpirun give an external target \(--host\)" -- \
  -n 2 "$bin" memcached -n 100 -c 2 --no-save

# 7. --find-max on two ranks: rank 0 searches, every rank runs each step's share of the offered
# rate in lockstep, rank 0 judges the merged step. The verdict depends on this machine's load
# (found, none, or client-bound when a rank's generator fell behind); the figures must be every
# rank's: the row is one step's merged figures, and that step's achieved rate in the search is the
# row's req/s (rank 0 merged it as the run's merge does).
"${mpi[@]}" -n 2 "$bin" redis --host 127.0.0.1 --port "$port" --ops get -c 2 --find-max 'p99<2ms' \
  --step-duration 200ms --find-precision 20% --find-repeat 1 --no-save --json cap.json >out.txt 2>&1
rc=$?
if json_check cap.json "
j = d['jobs'][0]
c = j['capacity']
want = {'found': 0, 'none': 3, 'client-bound': 2}[c['verdict']]
assert d['exit_code'] == want == $rc, (d['exit_code'], c['verdict'], $rc)
assert c['slo'] == 'p99<2ms' and c['steps'][0]['kind'] == 'probe' and len(c['steps']) >= 2, c['steps']
assert [r['clients'] for r in d['ranks']] == [[1], [1]], d['ranks']
assert j['params']['clients'] == 2 and j['ops_ok'] > 0, j['params']
assert sum(n for _, n in j['histogram']['buckets']) == j['ops_ok']
assert any(abs(s['achieved'] - j['rps']) <= 1e-6 * j['rps'] for s in c['steps']), (j['rps'], c['steps'])
if c['verdict'] == 'found':
    assert c['repeats']['count'] == 1 and c['max_rps'] > 0, c
if c['verdict'] == 'client-bound':
    assert c['first_fail']['why'].startswith('rank '), c['first_fail']
"; then ok; else bad "find-max on 2 ranks (exit $rc)"; fi
grep -q "steps of 0.20 s in" out.txt && ok || bad "find-max on 2 ranks: the search's note"

# 8. --metrics-listen on 2 ranks: rank 0 alone listens and serves the whole run's counters (the
# other ranks' come with their heartbeats, and exactly at each phase's end). Scraped all along:
# once "first" has ended, its op and latency counts on the page are the merged result's, not
# rank 0's share.
mport=$(free_port)
cat >live.toml <<EOF
[suite]
name = "live"
[defaults]
clients = 2
[[job]]
name = "first"
adapter = "null"
duration = "2s"
[[job]]
name = "second"
adapter = "null"
duration = "3s"
EOF
"${mpi[@]}" -n 2 "$bin" run live.toml --metrics-listen "127.0.0.1:$mport" --no-save --json live.json >out.txt 2>&1 &
run=$!
k=0
while kill -0 "$run" 2>/dev/null; do
  curl -s -m 1 "http://127.0.0.1:$mport/metrics" >"scrape.$k" 2>/dev/null && k=$((k + 1))
  sleep 0.2
done
wait "$run"
rc=$?
if [ "$rc" -eq 0 ] && json_check live.json "
import glob, re
def value(page, metric, name):
    m = re.search('^' + metric + r'\{name=\"' + name + r'\".*\} (\S+)$', page, re.M)
    return float(m.group(1)) if m else None
pages = [open(f).read() for f in sorted(glob.glob('scrape.*'), key=lambda f: int(f.split('.')[1]))]
first = d['jobs'][0]
assert [r['clients'] for r in d['ranks']] == [[1, 1], [1, 1]], d['ranks']
late = [p for p in pages if value(p, 'mwbench_running', 'second') == 1]
assert late, '%d scrapes, none during second' % len(pages)
total = first['ops_ok'] + first['ops_failed']
assert value(late[-1], 'mwbench_ops_total', 'first') == total, (value(late[-1], 'mwbench_ops_total', 'first'), total)
assert value(late[-1], 'mwbench_latency_seconds_count', 'first') == first['ops_ok']
during = [p for p in pages if value(p, 'mwbench_running', 'first') == 1]
assert any(value(p, 'mwbench_rate_ops_per_second', 'first') > 0 for p in during), 'no rate during first'
"; then ok; else bad "--metrics-listen on 2 ranks (exit $rc)"; fi

echo "mpi: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
