#!/usr/bin/env bash
# --hdr-log: the interval log is read back by an independent reader, the npm package
# hdr-histogram-js (scripts/setup installs it beside pouchdb-server), and holds the same counts,
# max and percentiles per interval as the JSON's series.
set -u
bin="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
node_dir=""
for d in /opt/mwbench-node "$src/.deps"; do
  [ -f "$d/node_modules/hdr-histogram-js/package.json" ] && node_dir="$d" && break
done
if [ -z "$node_dir" ] || ! command -v node >/dev/null; then
  echo "hdrlog: hdr-histogram-js or node is not installed (scripts/setup installs them)"
  echo "hdrlog: 0 passed, 1 failed"
  exit 1
fi
pass=0 fail=0
"$bin" null --duration 2s --interval 250ms -c 1,2 --fail-every 1000 --hdr-log run.hlog --json run.json --no-save -q >/dev/null 2>&1
node - "$node_dir" run.hlog >decoded.json <<'JS'
const hdr = require(process.argv[2] + '/node_modules/hdr-histogram-js');
const fs = require('fs');
const reader = new hdr.HistogramLogReader(fs.readFileSync(process.argv[3], 'utf8'));
const out = [];
for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram())
  out.push({tag: h.tag, start_ms: h.startTimeStampMsec, end_ms: h.endTimeStampMsec, count: h.totalCount,
            max: h.maxValue, p50: h.getValueAtPercentile(50), p99: h.getValueAtPercentile(99)});
console.log(JSON.stringify(out));
JS
if python3 - <<'PY'
import json, sys
run = json.load(open('run.json'))
got = json.load(open('decoded.json'))
want = []
for j in run['jobs']:
    tag = ''.join(c if c.isalnum() or c in '._-' else '_' for c in j['name'])
    for iv in j['series']['intervals']:
        want.append((tag, iv))
assert len(got) == len(want) and len(got) >= 14, (len(got), len(want))
close = lambda a, b: abs(a - b) <= 0.01 * max(a, b) + 1
t0 = got[0]['start_ms']
for g, (tag, iv) in zip(got, want):
    assert g['tag'] == tag, (g['tag'], tag)
    assert g['count'] == iv['ok'], (g, iv)
    if iv['ok']:
        # the reader's max and percentiles are bucket values (2 significant figures); the JSON's max is exact
        assert close(g['max'], iv['max']), (g, iv)
        assert close(g['p50'], iv['p50']) and close(g['p99'], iv['p99']), (g, iv)
# the intervals of a job are --interval apart
a = [g for g in got if g['tag'] == got[0]['tag']]
assert all(abs((y['start_ms'] - x['start_ms']) - 250) < 1 for x, y in zip(a, a[1:])), [g['start_ms'] - t0 for g in a]
print('checked', len(got), 'intervals,', sum(g['count'] for g in got), 'ops')
PY
then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: hdr-histogram-js reads other counts than the JSON"; head -c 3000 run.hlog; head -c 2000 decoded.json
fi
head -5 run.hlog | grep -q '^#\[Histogram log format version 1.3\]$' && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: log header"; }
echo "hdrlog: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
