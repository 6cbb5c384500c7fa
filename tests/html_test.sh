#!/usr/bin/env bash
# The report people share, rendered by headless Chromium: a real suite run (null, SQLite and
# Tokyo Cabinet in /dev/shm: no servers, no disk), a workload, and a crafted file whose group spans 1000x
# with a failed and a skipped row. tests/html_test.js checks the page in the browser.
#   html_test.sh MWBENCH [KEEP_DIR]   (KEEP_DIR: keep the report and screenshots there)
set -u
bin="$(realpath "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ] || ! command -v node >/dev/null; then
  echo "html: chromium and node are needed (scripts/setup installs them)"
  echo "html: 0 passed, 1 failed"
  exit 1
fi
cd "$work"
cat >suite.toml <<'EOF'
[suite]
name = "html-test"
[[job]]
adapter = "null"
duration = "1s"
interval = "100ms"
clients = [1, 2]
[[job]]
adapter = "sqlite"
ops = ["insert"]
path = "/dev/shm"
journal-mode = ["wal", "delete"]
n = 100
interval = "60s"  # one interval however loaded the machine: no time series here
[[job]]
adapter = "tc"
ops = ["put"]
path = "/dev/shm"
kind = ["hash", "btree", "memory"]
n = 1000
interval = "60s"
[[job]]
name = "ycsb-b null"
adapter = "null"
mix = "read:95,update:5"
keys = "zipfian"
keyspace = 500
n = 2000
rate = 100000  # near tc's rate: at full speed null's bar leaves tc's a few pixels wide
interval = "60s"
[[job]]
name = "ycsb-b tc"
adapter = "tc"
mix = "read:95,update:5"
keys = "zipfian"
keyspace = 500
path = "/dev/shm"
kind = ["hash", "btree"]
n = 2000
interval = "60s"
EOF
if ! timeout 150 "$bin" run suite.toml --repeat 3 --results-dir runs --html run.html -q >run.log 2>&1; then
  cat run.log
  echo "html: 0 passed, 1 failed (the suite did not run)"
  exit 1
fi
run=$(ls runs/*.json)
# The crafted file: one group (disk randread) from 1,000 to 1,000,000 req/s, a failed row, a
# skipped row, and a tmpfs O_DIRECT warning; its jobs are the suite's first job, renamed.
python3 - "$run" crafted.json <<'PY'
import json, sys, copy
doc = json.load(open(sys.argv[1]))
base = doc['jobs'][0]
jobs = []
tmpfs = 'O_DIRECT on tmpfs still goes through memory: not a device figure'
for path, rps, extra in [('/dev/shm', 1e6, {'warnings': [tmpfs]}), ('/var/tmp', 1e3, {}),
                         ('/mnt/nfs', 2e4, {'ops_failed': 5}),
                         ('/mnt/usb', 0, {'state': 'skipped', 'message': 'no such directory /mnt/usb'})]:
    j = copy.deepcopy(base)
    for key in ('repeats', 'rps_min', 'rps_max', 'rps_median'):
        j.pop(key, None)
    j.update(name='disk randread', adapter='disk', op='randread', target=path, rps=rps)
    j['params']['path'] = path
    if 'warnings' in extra:  # the base job's own warnings (and their kinds) are replaced
        j.pop('warning_kinds', None)
    j.update(extra)
    jobs.append(j)
doc['jobs'] = jobs
doc['suite'] = 'crafted'
json.dump(doc, open(sys.argv[2], 'w'))
PY
if ! "$bin" report "$run" crafted.json --html report.html 2>report.log; then
  cat report.log
  echo "html: 0 passed, 1 failed"
  exit 1
fi
# Groups, in order: null nop (2 clients, 1 s each: req/s and p99 over time), sqlite insert (2 journal modes), tc put (3 kinds), the workload
# (null + 2 tc kinds), disk randread (the crafted file: two bars in colour, the failed one faded).
cat >expect.json <<'EOF'
{"groups": 5, "workloads": 1, "fastest": 4, "log_group": "g5", "log_ticks": "100 1k 10k 100k 1M",
 "skip_reason": "no such directory /mnt/usb",
 "verdict": "^/dev/shm is fastest: 1,000,000 req/s, p99 .*; 1000. the req/s of /var/tmp",
 "colours": {"g1": 2, "g3": 3, "g4": 3, "g5": 2},
 "timeline": {"g1": 2, "g5": 3}, "min_points": 8}
EOF
timeout 90 node "$here/html_test.js" "$chrome" "$work/report.html" expect.json "$work" ${2:+keep}
code=$?
# `run --html` wrote the same report of the run alone: its four groups, its workload
sections=$(grep -o '<section class="group"' run.html 2>/dev/null | wc -l)
if [ "$sections" -ne 4 ] || ! grep -q '<table class="workload">' run.html; then
  echo "FAIL: run --html FILE: expected 4 groups and a workload table, got $sections groups"
  code=1
fi
if [ -n "${2:-}" ]; then
  mkdir -p "$2" && cp report.html ./*.png ./*.pdf "$2"/ 2>/dev/null
fi
exit $code
