#!/usr/bin/env bash
# Signals and crashes: SIGTERM, SIGHUP, a second Ctrl-C and SIGKILL never leave a managed server
# or its /tmp/mwbench-svc-* directory behind; a stop ends every wait and set-up loop within 1 s.
# Every check is scoped to the processes and directories this script's runs created, so other
# runs on the machine do not confuse it.
set -u
bin="$1"
self="$(readlink -f "$bin")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL: %s\n' "$*"; [ -f out.txt ] && tail -5 out.txt; }

# descendants PID: every process below PID, one pid a line
descendants() {
  local c
  for c in $(pgrep -P "$1"); do
    echo "$c"
    descendants "$c"
  done
}
# servers PID: the managed servers of mwbench PID: its descendants that are not mwbench (nor a
# supervisor, a forked copy of it)
servers() {
  local p
  for p in $(descendants "$1"); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" != "$self" ] && echo "$p"
  done
}
# wait_servers PID N: waits (up to 60 s) until mwbench PID runs N managed servers, then 1 s more
wait_servers() {
  local i
  for ((i = 0; i < 600; i++)); do
    if [ "$(servers "$1" | wc -l)" -ge "$2" ]; then
      sleep 1
      return 0
    fi
    sleep 0.1
  done
  return 1
}
# dirs_of PIDS...: the temp dirs the given processes run in
dirs_of() {
  local p
  for p in "$@"; do readlink "/proc/$p/cwd" 2>/dev/null; done | grep '^/tmp/mwbench-svc-' | sort -u
}
# gone_within SECONDS PIDS...: true when every PID has exited within SECONDS
# Every dir given removed within $1 seconds (a supervisor removes its server's dir once the
# server is gone; on a loaded machine that takes a moment).
removed_within() {
  local limit="$1" d left i
  shift
  for ((i = 0; i < limit * 10; i++)); do
    left=0
    for d in "$@"; do [ -e "$d" ] && left=1; done
    [ "$left" -eq 0 ] && return 0
    sleep 0.1
  done
  return 1
}
gone_within() {
  local limit="$1" p alive i
  shift
  for ((i = 0; i < limit * 10; i++)); do
    alive=0
    for p in "$@"; do  # a zombie waiting for init to reap it is gone too
      kill -0 "$p" 2>/dev/null && [ "$(ps -o stat= -p "$p" | cut -c1)" != Z ] && alive=1
    done
    [ "$alive" -eq 0 ] && return 0
    sleep 0.1
  done
  return 1
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
result_json() { ls "$1"/*.json 2>/dev/null | head -1; }

# 1-2. SIGTERM and SIGHUP behave like Ctrl-C: partial results printed and written, the managed
# redis-server stopped and its directory removed, exit 128+signal.
for sig in TERM:143 HUP:129; do
  name="${sig%%:*}" want="${sig##*:}"
  "$bin" redis -n 100000000 --results-dir "res-$name" >out.txt 2>&1 &
  pid=$!
  wait_servers "$pid" 1
  srv=$(servers "$pid" | tr '\n' ' ')
  dirs=$(dirs_of $srv)
  kill -"$name" "$pid"
  wait "$pid"
  rc=$?
  f=$(result_json "res-$name")
  if [ -n "$srv" ] && [ -n "$dirs" ] && [ "$rc" -eq "$want" ] && grep -q "interrupted: redis set" out.txt &&
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['interrupted'] and d['exit_code']==$want and d['jobs'][0]['ops_ok']>0" "$f" 2>/dev/null &&
    gone_within 1 $srv && ! ls -d $dirs >/dev/null 2>&1; then
    ok
  else
    bad "SIG$name: exit $rc (wanted $want), servers [$srv], dirs [$dirs], result [$f]"
  fi
done

# 3. A second Ctrl-C exits at once and still stops the servers; their supervisors remove the dirs.
"$bin" redis -n 100000000 --no-save >out.txt 2>&1 &
pid=$!
wait_servers "$pid" 1
srv=$(servers "$pid" | tr '\n' ' ')
dirs=$(dirs_of $srv)
kill -INT "$pid"
kill -INT "$pid"
wait "$pid"
rc=$?
gone=no removed=no
gone_within 2 $srv && gone=yes
removed_within 2 $dirs && removed=yes
if [ -n "$srv" ] && [ "$rc" -eq 130 ] && [ "$gone" = yes ] && [ "$removed" = yes ]; then
  ok
else
  bad "double SIGINT: exit $rc, servers [$srv] gone within 2 s: $gone, dirs [$dirs] removed 2 s later: $removed"
fi

# 4. SIGKILL of mwbench: the supervisor stops the server and removes its dir within ~2 s.
"$bin" redis -n 100000000 --no-save >out.txt 2>&1 &
pid=$!
wait_servers "$pid" 1
srv=$(servers "$pid" | tr '\n' ' ')
dirs=$(dirs_of $srv)
kill -KILL "$pid"
wait "$pid" 2>/dev/null
if [ -n "$srv" ] && [ -n "$dirs" ] && gone_within 2 $srv && removed_within 2 $dirs; then
  ok
else
  bad "SIGKILL redis: servers [$srv] left: $(ps -o pid=,cmd= -p ${srv:-0}), dirs [$dirs]"
fi

# 5. SIGKILL of mwbench and of the supervisor at once: the server dies with its supervisor
# (PR_SET_PDEATHSIG); the dir left behind is removed by the next mwbench that starts a server.
"$bin" redis -n 100000000 --no-save >out.txt 2>&1 &
pid=$!
wait_servers "$pid" 1
sup=$(pgrep -P "$pid" | tr '\n' ' ')
srv=$(servers "$pid" | tr '\n' ' ')
dirs=$(dirs_of $srv)
kill -KILL "$pid" $sup
wait "$pid" 2>/dev/null
gone=no
gone_within 2 $srv && gone=yes
left=no
ls -d $dirs >/dev/null 2>&1 && left=yes
"$bin" redis -n 10 --no-save >out.txt 2>&1
rc=$?
if [ -n "$srv" ] && [ "$gone" = yes ] && [ "$left" = yes ] && [ "$rc" -eq 0 ] && ! ls -d $dirs >/dev/null 2>&1; then
  ok
else
  bad "SIGKILL mwbench+supervisor: server gone: $gone, dir left at first: $left, next run exit $rc, dirs [$dirs] now: $(ls -d $dirs 2>&1)"
fi

# 6. Stale dirs: one whose owner is gone (with a process still running in it) is cleaned up at
# the next start, and so is one handed to a server's user (as PostgreSQL's is) whose owner file
# is ours; one whose owner is alive, and one without an owner file, are left alone.
stale=$(mktemp -d /tmp/mwbench-svc-testXXXXXX)
handed=$(mktemp -d /tmp/mwbench-svc-testXXXXXX)
alive=$(mktemp -d /tmp/mwbench-svc-testXXXXXX)
noowner=$(mktemp -d /tmp/mwbench-svc-testXXXXXX)
sh -c 'exit 0' &
dead=$!
wait "$dead"
echo "$dead 12345" >"$stale/owner.pid"
echo "$dead 12345" >"$handed/owner.pid"
chown nobody "$handed"
echo "$$ $(cut -d' ' -f22 /proc/$$/stat)" >"$alive/owner.pid"
(cd "$stale" && exec sleep 300) &
straggler=$!
disown "$straggler"  # no "Killed" notice when mwbench kills it
"$bin" redis -n 10 --no-save >out.txt 2>&1
rc=$?
if [ "$rc" -eq 0 ] && ! [ -e "$stale" ] && ! [ -e "$handed" ] && gone_within 1 "$straggler" && [ -d "$alive" ] && [ -d "$noowner" ]; then
  ok
else
  bad "stale dirs: exit $rc; stale dir $(ls -d "$stale" 2>&1); handed-over dir $(ls -d "$handed" 2>&1); straggler $(ps -o pid= -p "$straggler"); alive dir kept: $([ -d "$alive" ] && echo yes); no-owner dir kept: $([ -d "$noowner" ] && echo yes)"
fi
kill -KILL "$straggler" 2>/dev/null
wait "$straggler" 2>/dev/null
rm -rf "$stale" "$handed" "$alive" "$noowner"

# 7. A server that starts children (a shell running sleeps) and never answers: Ctrl-C during the
# start-up wait ends the run at once, and the server's whole process tree is stopped.
printf '#!/bin/sh\necho $$ >>%s/fake.pids\nsleep 300 &\necho $! >>%s/fake.pids\nsleep 300\n' "$work" "$work" >fake-server
chmod +x fake-server
"$bin" redis --server-binary "$work/fake-server" -n 10 --no-save >out.txt 2>&1 &
pid=$!
for ((i = 0; i < 50; i++)); do [ "$(cat fake.pids 2>/dev/null | wc -l)" = 2 ] && break; sleep 0.1; done
tree=$(cat fake.pids 2>/dev/null | tr '\n' ' ')
t0=$(date +%s%N)
kill -INT "$pid"
wait "$pid"
rc=$?
ms=$(ms_since "$t0")
if [ -n "$tree" ] && [ "$rc" -eq 130 ] && [ "$ms" -lt 1000 ] && grep -q "interrupted during start-up" out.txt && gone_within 1 $tree; then
  ok
else
  bad "Ctrl-C during a server's start-up: exit $rc in $ms ms; tree [$tree] left: $(ps -o pid= -p ${tree:-0} | tr '\n' ' ')"
fi
rm -f fake.pids

# 8. The same server tree with mwbench SIGKILLed: the supervisor stops the whole group.
"$bin" redis --server-binary "$work/fake-server" -n 10 --no-save >out.txt 2>&1 &
pid=$!
for ((i = 0; i < 50; i++)); do [ "$(cat fake.pids 2>/dev/null | wc -l)" = 2 ] && break; sleep 0.1; done
tree=$(cat fake.pids 2>/dev/null | tr '\n' ' ')
dirs=$(dirs_of $tree)
kill -KILL "$pid"
wait "$pid" 2>/dev/null
if [ -n "$tree" ] && [ -n "$dirs" ] && gone_within 2 $tree && removed_within 2 $dirs; then
  ok
else
  bad "SIGKILL during start-up of a server with children: tree [$tree] left: $(ps -o pid= -p ${tree:-0} | tr '\n' ' '), dirs [$dirs]"
fi

# 9-11. gearmand with a memcached or a postgres queue, and pouchdb-server (node): SIGKILL
# leaves nothing.
kill_run() {  # kill_run NAME N_SERVERS mwbench-args...
  local name="$1" n="$2"
  shift 2
  "$bin" "$@" --no-save >out.txt 2>&1 &
  local pid=$!
  wait_servers "$pid" "$n"
  local all srv dirs
  srv=$(servers "$pid" | tr '\n' ' ')
  all=$(descendants "$pid" | tr '\n' ' ')
  dirs=$(dirs_of $srv)
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  if [ "$(wc -w <<<"$srv")" -ge "$n" ] && [ -n "$dirs" ] && gone_within 3 $all && ! ls -d $dirs >/dev/null 2>&1; then
    ok
  else
    bad "SIGKILL $name: servers [$srv]; left: $(ps -o pid=,cmd= -p ${all:-0} | tr '\n' ' '); dirs [$dirs]"
  fi
}
if "$bin" list | grep -A3 '^gearman' | grep -q "this machine: ready"; then
  kill_run "gearman libmemcached" 2 gearman --queue libmemcached -n 100000000
  # postgres: a postmaster with its own children, run as another user, set up by initdb
  if "$bin" list | grep -A3 '^gearman' | grep -q "queue types: .*postgres"; then
    kill_run "gearman postgres" 6 gearman --queue postgres -n 100000000
  fi
else
  echo "skip: gearman not available"
fi
if "$bin" list | grep -A3 '^couchdb' | grep -q "this machine: ready"; then
  kill_run "couchdb (pouchdb-server)" 1 couchdb -n 100000000
else
  echo "skip: pouchdb-server not available"
fi
if "$bin" list | grep -A3 '^memcached' | grep -q "this machine: ready"; then
  kill_run "memcached" 1 memcached --ops set -n 100000000
fi

# 12-19. Stop means stop: Ctrl-C ends each slow wait and set-up loop within 1 s, exit 130 (143
# for SIGTERM), and what set-up created is removed.
stop_within() {  # stop_within NAME SIGNAL WANT_EXIT DELAY_S mwbench-args...
  local name="$1" sig="$2" want="$3" delay="$4"
  shift 4
  "$bin" "$@" --no-save >out.txt 2>&1 &
  local pid=$!
  sleep "$delay"
  local t0 rc ms
  t0=$(date +%s%N)
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  ms=$(ms_since "$t0")
  if [ "$rc" -eq "$want" ] && [ "$ms" -lt 1000 ] && grep -q "interrupted" out.txt && ! grep -q "SET-UP ERROR" out.txt; then
    ok
  else
    bad "$name: exit $rc (wanted $want) after $ms ms"
  fi
}
mkdir -p data
stop_within "Ctrl-C during --rate 0.05" INT 130 1 null --rate 0.05 -n 10
stop_within "Ctrl-C during a 20M-row sqlite preload" INT 130 1.5 sqlite --rows 20000000 --path "$work/data"
stop_within "Ctrl-C during a 3 GB disk layout" INT 130 1 disk --size 3G --path "$work/data"
stop_within "Ctrl-C during a tc preload" INT 130 1.5 tc --ops get --keyspace 100000000 --path "$work/data"
if [ -z "$(ls data)" ]; then ok; else bad "set-up files left after interrupted preloads: $(ls data)"; fi
stop_within "SIGTERM during a redis preload" TERM 143 2 redis --ops get --keyspace 100000000
stop_within "SIGTERM during a memcached preload" TERM 143 2 memcached --ops get --keyspace 20000000 --value-size 10
if "$bin" list | grep -A3 '^gearman' | grep -q "this machine: ready"; then
  stop_within "Ctrl-C while queueing gearman jobs to drain" INT 130 2 gearman --ops drain -n 100000000
fi
if "$bin" list | grep -A3 '^couchdb' | grep -q "this machine: ready"; then
  stop_within "Ctrl-C during a couchdb preload" INT 130 5 couchdb --ops get --keyspace 100000000
fi

# 20-21. A NATS server that sends INFO and never answers PING (libnats 3.4 waited for the PONG
# forever, at 100% CPU, and ignored the first signal): --timeout ends the connect with a one-line
# set-up error (exit 2); a SIGTERM 1 s into a longer one ends the run within 1 s, exit 143, the
# result written.
if "$bin" list | grep -q '^nats '; then
  python3 -c '
import socket, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
def talk(c):
    try:
        c.sendall(b"INFO {\"server_id\":\"fake\",\"version\":\"2.9.10\",\"proto\":1,\"max_payload\":1048576}\r\n")
        while c.recv(65536):
            pass
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=talk, args=(c,), daemon=True).start()
' >nats.port &
  fake=$!
  for ((i = 0; i < 50; i++)); do [ -s nats.port ] && break; sleep 0.1; done
  port=$(cat nats.port)
  t0=$(date +%s%N)
  timeout -s KILL 20 "$bin" nats --host 127.0.0.1 --port "$port" --timeout 1s -n 10 --no-save >out.txt 2>&1
  rc=$?
  ms=$(ms_since "$t0")
  want="nats 127.0.0.1:$port: cannot connect: the server sent INFO but did not answer PING within the timeout"
  if [ "$rc" -eq 2 ] && [ "$ms" -lt 3000 ] && [ "$(grep -c "$want" out.txt)" -eq 1 ]; then
    ok
  else
    bad "NATS server that never answers PING, --timeout 1s: exit $rc (wanted 2) after $ms ms"
  fi
  "$bin" nats --host 127.0.0.1 --port "$port" --timeout 30s -n 10 --results-dir res-nats >out.txt 2>&1 &
  pid=$!
  sleep 1
  t0=$(date +%s%N)
  kill -TERM "$pid"
  gone_within 5 "$pid" || kill -KILL "$pid"  # a run that ignores the signal fails, never hangs
  wait "$pid"
  rc=$?
  ms=$(ms_since "$t0")
  f=$(result_json res-nats)
  if [ "$rc" -eq 143 ] && [ "$ms" -lt 1000 ] && grep -q "interrupted during the connect" out.txt &&
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['interrupted'] and d['exit_code']==143" "$f" 2>/dev/null; then
    ok
  else
    bad "SIGTERM while a NATS server never answers PING: exit $rc (wanted 143) after $ms ms, result [$f]"
  fi
  kill "$fake"
  wait "$fake" 2>/dev/null
else
  echo "skip: the nats adapter is not built"
fi

echo "signals: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
