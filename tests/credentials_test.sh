#!/usr/bin/env bash
# Wrong credentials on the command line, against real servers that want a login (redis-server
# --requirepass, mosquitto with a password file, nats-server --user/--pass, started here on free
# loopback ports): exit 2, one SET-UP ERROR line, and the password (only ever in the variable
# --password-env names) nowhere in stdout, stderr or the --json file. The right password then
# runs: the refusal is the server's, not a broken client. (PostgreSQL, MariaDB, RabbitMQ and
# CouchDB: their test binaries check the same messages on their shared managed servers.)
set -u
bin="$1"
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_port PORT: until something listens there (5 s at most)
wait_port() { for _ in $(seq 50); do (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# refused NAME VAR ARGS...: with the wrong password in VAR, then the right one
refused() {
  local name="$1" var="$2"
  shift 2
  env "$var=Wr0ngPw-77" timeout 30 "$bin" "$@" --no-save --json "$name.json" >"$name.out" 2>"$name.err"
  local rc=$?
  [ "$rc" -eq 2 ] && ok || bad "$name: exit $rc, wanted 2"
  local n
  n="$(cat "$name.out" "$name.err" | grep -c 'SET-UP ERROR')"
  [ "$n" -eq 1 ] && ok || bad "$name: $n SET-UP ERROR lines, wanted 1"
  grep -q -- "--password-env\|WRONGPASS" "$name.out" "$name.err" && ok || bad "$name: the error names no password"
  if grep -q "Wr0ngPw-77" "$name.out" "$name.err" "$name.json"; then bad "$name: the password was printed"; else ok; fi
  env "$var=Right-Pw-1" timeout 30 "$bin" "$@" --no-save >"$name.ok" 2>&1 && ok || bad "$name: the right password failed"
}

if command -v redis-server >/dev/null; then
  p="$(port)"
  redis-server --port "$p" --bind 127.0.0.1 --save '' --requirepass Right-Pw-1 --dir "$work" >/dev/null &
  pids+=($!)
  wait_port "$p" && refused redis MWB_PW redis --ops set --host 127.0.0.1 --port "$p" --password-env MWB_PW -n 20
fi
if command -v mosquitto >/dev/null && command -v mosquitto_passwd >/dev/null; then
  p="$(port)"
  mosquitto_passwd -b -c "$work/mqtt.pw" bob Right-Pw-1
  printf 'listener %s 127.0.0.1\nallow_anonymous false\npassword_file %s\nuser root\n' "$p" "$work/mqtt.pw" >mqtt.conf
  mosquitto -c mqtt.conf 2>/dev/null &
  pids+=($!)
  wait_port "$p" && refused mqtt MWB_PW mqtt --host 127.0.0.1 --port "$p" --user bob --password-env MWB_PW -n 20
fi
if command -v nats-server >/dev/null; then
  p="$(port)"
  nats-server -a 127.0.0.1 -p "$p" --user bob --pass Right-Pw-1 >/dev/null 2>&1 &
  pids+=($!)
  wait_port "$p" && refused nats MWB_PW nats --host 127.0.0.1 --port "$p" --user bob --password-env MWB_PW -n 20
fi
finish credentials
