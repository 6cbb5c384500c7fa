#!/usr/bin/env bash
# Decisions end to end (issue 41): a synthetic HTTP server whose per-request cost is calibrated busy
# CPU scaled by a known factor (tests/decide_server), beside a noisy neighbour (a CPU hog in random
# bursts, the servers stopped with SIGSTOP for a few ms at random). A server 1.25 times slower is
# decided slower; the same server twice is never faster or slower. Then `mwbench decide` on
# commands, and its bad input: each one clear line, exit 2 (1 for failing commands), and what was
# measured written. Every result file written here is loaded back (report).
#   decide_test.sh MWBENCH DECIDE_SERVER
set -u
bin="$1"
srv="$2"
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh"
pids=()
trap 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"' EXIT

# start_server ITERATIONS FACTOR: its port in $port, its pid in pids. Not called in a $(...): that
# subshell's pids would never reach the trap, and the servers would outlive the test.
start_server() {
  local f="port.${#pids[@]}"
  "$srv" serve "$1" "$2" >"$f" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$f" ] && break; sleep 0.05; done
  port=$(head -1 "$f")
}
loaded() {  # loaded NAME FILE: the file loads back (the report reads it through the loader)
  check "$1: loads back" 0 "report: " -- "$bin" report "$2" --html "$2.html"
}

# 200 us of busy CPU per request (the fastest of several calibrations: a slow moment of the machine
# cannot make the cost smaller than meant).
iters=$("$srv" calibrate 200)
[ "${iters:-0}" -gt 1000 ] && ok || bad "calibration: '$iters' iterations"
start_server "$iters" 1.0 && p1=$port
start_server "$iters" 1.25 && p2=$port
start_server "$iters" 1.0 && p3=$port
[ "${#pids[@]}" = 3 ] && [ -n "$p1" ] && [ -n "$p2" ] && [ -n "$p3" ] && ok || bad "servers: pids '${pids[*]}', ports '$p1' '$p2' '$p3'"
"$srv" noise 41 "${pids[@]}" &
noise=$!
pids+=("$noise")

# Each run: 1,000 requests of 200 to 250 us of CPU over 2 connections, about 0.15 s.
http=(http --keepalive -n 1000 -c 2 --warmup 50 --no-save)
check "1.25x the cost per request is slower" 0 "^  B  .*  slower  0\.[0-9]+x \(0\.[0-9]+x-0\.[0-9]+x\)" -- \
  "$bin" "${http[@]}" --url "http://127.0.0.1:$p1/,http://127.0.0.1:$p2/" --decide --max-rounds 60 --json slower.json
check "its verdict in the job's row" 0 '"verdict":"slower"' -- grep -o '"verdict":"slower"' slower.json
loaded "slower" slower.json
# The same measured as CPU per op (mwbench's and the servers'; lower is better): the cost itself.
check "... and its CPU per op is more" 0 "^  B  .*  slower  0\.[0-9]+x" -- \
  "$bin" "${http[@]}" -n 300 --url "http://127.0.0.1:$p1/,http://127.0.0.1:$p2/" --decide --metric cpu --max-rounds 30
# The same server twice (two processes of the same cost): never faster or slower, whatever the noise.
"$bin" "${http[@]}" --url "http://127.0.0.1:$p1/,http://127.0.0.1:$p3/" --decide --max-rounds 12 --json same.json >same.txt 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -qE '^  B  .*  (equivalent|undecided|different-within-margin)' same.txt &&
  ! grep -qE '"verdict":"(faster|slower)"' same.json; then ok; else bad "the same server twice (exit $rc)"; cat same.txt; fi
loaded "same" same.json
kill "$noise" 2>/dev/null

# Commands. The figure read from the output (--metric): each run's CPU time (lower is better).
burn="$srv burn $((iters * 100))"  # 20 ms of CPU
cpu=(--metric 'cpu: ([0-9.]+) s' --max-rounds 30 --no-save)
check "decide: a command 1.25x the work is slower" 0 "^  B  .*burn.*  slower  " -- \
  "$bin" decide "$burn 1.0" "$burn 1.25" "${cpu[@]}" --json cmd.json
loaded "decide" cmd.json
check "decide: one decision at the top of its file" 0 '"decision": ?\{"alternative": ?"B"' -- \
  grep -oE '"decision": ?\{"alternative": ?"B"' cmd.json
check "decide --gate: slower exits 3" 3 "DECISION GATE FAILED" -- "$bin" decide "$burn 1.0" "$burn 1.25" "${cpu[@]}" --gate
check "decide --expect: not shown exits 3 with --gate" 3 "B>=1.05: failed" -- \
  "$bin" decide "$burn 1.0" "$burn 1.25" "${cpu[@]}" --gate --expect 'B>=1.05'
check "decide: higher is better" 0 "^  B  .*  faster  " -- \
  "$bin" decide "echo 'rate: 100 per s'" "echo 'rate: 150 per s'" --metric 'rate: ([0-9.]+)' --higher-is-better \
  --max-rounds 6 --no-save
# Without --metric: the wall time.
check "decide: wall time, 10 times as long is slower" 0 "^  B  sleep 0.5  slower  " -- \
  "$bin" decide "sleep 0.05" "sleep 0.5" --max-rounds 8 --no-save

# Bad input: one clear line each, and nothing measured lost.
check "decide: one command" 2 "^mwbench decide: a decision needs two alternatives or more, got 1" -- "$bin" decide "true" --no-save
check "decide: margin 0" 2 "^mwbench decide: --margin expects a percentage above 0% and below 100% \(5%\), got '0%'" -- \
  "$bin" decide true true --margin 0% --no-save
check "decide: margin 100%" 2 "got '100%'" -- "$bin" decide true true --margin 100% --no-save
check "decide: an unknown --expect name" 2 "^mwbench decide: --expect Z>=1.1: 'Z' is not an alternative: A \(true\), B \(true\)" -- \
  "$bin" decide true true --expect 'Z>=1.1' --no-save
check "decide: a regex without a group" 2 "^mwbench decide: --metric: 'rate' has no group" -- \
  "$bin" decide true true --metric rate --no-save
check "decide: the regex matches nothing: exit 2, the command and its last lines" 2 \
  "B \(echo nothing here\): the metric matched nothing in its output \(--metric rate: \(\[0-9\]\+\)\); its last lines:" -- \
  "$bin" decide "echo rate: 5" "echo nothing here" --metric 'rate: ([0-9]+)' --no-save --json nomatch.json
check "decide: ... its last output line shown, on a line of its own" 2 "^  \\| nothing here$" -- \
  "$bin" decide "echo rate: 5" "echo nothing here" --metric 'rate: ([0-9]+)' --no-save
loaded "no match (partial)" nomatch.json
check "decide: a failing command: exit 1, its rounds failed, never data" 1 \
  "B \(false\) failed in each of its first 3 runs: exit 1" -- "$bin" decide true false --no-save --json failing.json
check "decide: ... the failed runs kept in the file" 0 '"ok":false' -- grep -o '"ok":false' failing.json
check "decide: ... and why" 0 '"why":"exit 1"' -- grep -o '"why":"exit 1"' failing.json
loaded "failing (partial)" failing.json
check "decide: secrets in a command are not written" 0 "password=\*\*\*" -- \
  sh -c "'$bin' decide 'echo password=hunter22 >/dev/null' true --max-rounds 6 --no-save --json secret.json >/dev/null 2>&1; grep -o 'password=[^ \"]*' secret.json | head -1"
check "decide: ... nor anywhere in the file" 1 "" -- grep -q hunter22 secret.json

# run --decide and an adapter's list: the jobs are the alternatives.
check "null -c 1,2 --decide: a line per alternative" 0 "^  B  null nop clients=2  " -- \
  "$bin" null -n 2000 -c 1,2 --decide --max-rounds 6 --no-save --json null.json
loaded "null" null.json
check "--decide: one job is not a decision" 2 "a decision needs two alternatives or more, got 1" -- "$bin" null -n 100 --decide --no-save
check "--decide: not with --repeat" 2 "--decide runs its own rounds \(--max-rounds\): drop --repeat" -- \
  "$bin" null -n 100 -c 1,2 --decide --repeat 3 --no-save
check "--margin needs --decide" 2 "--margin needs --decide" -- "$bin" null -n 100 --margin 3% --no-save
check "--baseline names a job" 2 "--baseline: 'nope' is not an alternative" -- \
  "$bin" null -n 100 -c 1,2 --decide --baseline nope --no-save
finish decide
