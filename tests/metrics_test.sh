#!/usr/bin/env bash
# --metrics-listen with a real Prometheus (Debian's prometheus, which scripts/setup installs):
# promtool accepts what mwbench serves, and a Prometheus server that scrapes a running mwbench
# answers a query for its op count through its HTTP API. The command-line bad input too.
set -u
bin="$1"
source "$(dirname "$0")/lib.sh"
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  echo "metrics: prometheus and promtool are not installed (scripts/setup installs them)"
  echo "metrics: 0 passed, 1 failed"
  exit 1
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The run lasts until the test stops it (SIGINT, once Prometheus answered): a run of fixed length
# ended before a Prometheus started on a busy machine scraped it once, and the query found nothing. The waits below end on what they wait for, within deadlines of their own.
"$bin" null --duration 600s --interval 200ms --metrics-listen 127.0.0.1:0 --no-save -q >run.out 2>run.err &
mw=$!
trap 'kill "$mw" 2>/dev/null; rm -rf "$work"' EXIT  # not left running, whatever ends the test
port=""
for _ in $(seq 50); do
  port="$(sed -n 's|^metrics: http://127.0.0.1:\([0-9]*\)/metrics$|\1|p' run.err)"
  [ -n "$port" ] && break
  sleep 0.1
done
if [ -z "$port" ]; then bad "no 'metrics:' line on stderr: $(cat run.err)"; kill "$mw"; finish metrics; exit 1; fi
running='^mwbench_running{name="null nop",adapter="null",op="nop",target="-"} 1$'
until=$((SECONDS + 30))  # the job starts after the listener: scraped until it runs
while :; do
  curl -s "http://127.0.0.1:$port/metrics" >scraped.txt
  grep -q "$running" scraped.txt || [ $SECONDS -ge $until ] && break
  sleep 0.2
done
if promtool check metrics <scraped.txt >promtool.out 2>&1; then ok; else bad "promtool check metrics: $(cat promtool.out)"; fi
grep -q "$running" scraped.txt && ok || bad "not running: $(head -20 scraped.txt)"

pport="$(free_port)"
cat >prometheus.yml <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: mwbench
    static_configs:
      - targets: ["127.0.0.1:$port"]
YML
prometheus --config.file=prometheus.yml --storage.tsdb.path=tsdb --web.listen-address="127.0.0.1:$pport" \
  >prometheus.log 2>&1 &
prom=$!
value=""
until=$((SECONDS + 90))  # Prometheus's start, a first scrape (every second) and the query
while [ $SECONDS -lt $until ]; do
  sleep 0.25
  value="$(curl -s "http://127.0.0.1:$pport/api/v1/query?query=mwbench_ops_total" |
    python3 -c 'import json,sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "")
except Exception:
    print("")' 2>/dev/null)"
  [ -n "$value" ] && [ "${value%%.*}" -gt 0 ] 2>/dev/null && break
done
kill "$prom" 2>/dev/null
wait "$prom" 2>/dev/null
if [ -n "$value" ] && [ "${value%%.*}" -gt 0 ] 2>/dev/null; then ok; else bad "Prometheus's query API gave no op count ('$value'): $(tail -5 prometheus.log)"; fi
kill -INT "$mw" 2>/dev/null
wait "$mw"

# Bad input: exit 2 naming the option, before anything runs.
# (the holder listens before mwbench starts: under load python3 takes more than half a second)
check "a port in use" 2 "--metrics-listen 127.0.0.1:$pport: the port is in use" -- \
  sh -c "python3 -c 'import socket,time; s=socket.socket(); s.bind((\"127.0.0.1\", $pport)); s.listen(); time.sleep(3)' & for i in \$(seq 100); do ss -ltn | grep -q ':$pport ' && break; sleep 0.1; done; \"$bin\" null -n 10 --metrics-listen 127.0.0.1:$pport --no-save"
check "not loopback" 2 "--metrics-listen 0.0.0.0:0: not a loopback address.*--metrics-any" -- "$bin" null -n 10 --metrics-listen 0.0.0.0:0 --no-save
check "any alone" 2 "--metrics-any needs --metrics-listen" -- "$bin" null -n 10 --metrics-any --no-save
wait
finish metrics
