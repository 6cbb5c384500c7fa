#!/usr/bin/env bash
# Exit 3 as a user meets it: SLOs (--slo, slo = in suites), the baseline gate of `compare` and
# `run --baseline`, and the errors of both (exit 2, one line).
set -u
bin="$1"
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh"

# SLOs on an adapter command
check "slo met: exit 0" 0 "SLO met: null nop: rps>1,errors=0" -- "$bin" null -n 10000 --slo 'rps>1,errors=0' -v --no-save
check "slo missed: exit 3, cell marked" 3 "^null nop .* !  0  " -- "$bin" null -n 10000 --slo 'max<1ns' --no-save
check "slo missed: the note" 3 "SLO MISSED: null nop: max [0-9.]+ ms, wanted max<1ns" -- "$bin" null -n 10000 --slo 'max<1ns' --no-save
check "slo missed: said on stderr" 3 "mwbench: SLO MISSED: see the cells marked !; exit 3" -- "$bin" null -n 10000 --slo 'max<1ns' --no-save
check "slo and failed ops: exit 1 wins" 1 "SLO MISSED: null nop: errors 10, wanted errors=0" -- "$bin" null -n 100 --fail-every 10 --slo 'errors=0' -v --no-save
check "bad slo: exit 2 naming the option" 2 "^mwbench null: --slo: 'p99<2': expected a latency with a unit: ns, us, ms or s \(2ms\)$" -- "$bin" null --slo 'p99<2' --no-save
lines "bad slo: one line" 1 -- "$bin" null --slo 'p99<2' --no-save
"$bin" null -n 1000 --slo 'p99<1s' --json slo.json --no-save >/dev/null 2>&1
if python3 -c "import json; s=json.load(open('slo.json'))['jobs'][0]['slo']; assert s=={'spec':'p99<1s','passed':True,'violations':[]}, s" 2>/dev/null; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: slo in the JSON"; cat slo.json | head -c 2000
fi

# SLOs in suites, and on run
printf '[[job]]\nadapter = "null"\nn = 1000\nslo = "p99<10s"\n\n[[job]]\nadapter = "null"\nname = "strict"\nn = 1000\nslo = "max<1ns"\n' >slo.toml
check "suite slo: exit 3" 3 "SLO MISSED: strict: max" -- "$bin" run slo.toml --no-save
check "suite slo: the other job met its own" 3 "SLO met: null nop: p99<10s" -- "$bin" run slo.toml -v --no-save
printf '[[job]]\nadapter = "null"\nn = 1000\n\n[[job]]\nadapter = "null"\nslo = "p99 < 2 parsecs"\n' >badslo.toml
check "suite slo error: file:line" 2 "^mwbench run: badslo.toml:7: slo: 'p99 < 2 parsecs': expected a latency with a unit" -- "$bin" run badslo.toml --no-save
printf '[[job]]\nadapter = "null"\nn = 1000\n' >ok.toml
check "run --slo applies to every job" 3 "SLO MISSED: null nop: max" -- "$bin" run ok.toml --slo 'max<1ns' --no-save
check "run --slo error names the option" 2 "^mwbench run: --slo: 'rps>fast': expected req/s as a number" -- "$bin" run ok.toml --slo 'rps>fast' --no-save

# The baseline gate: a result file with 5 repeats, and synthetic copies 20% slower and faster
"$bin" run ok.toml --repeat 5 --json base.json --no-save -q >/dev/null 2>&1
python3 - <<'PY'
import copy, json
d = json.load(open('base.json'))
runs = [10000.0, 10100.0, 9900.0, 10050.0, 9950.0]  # req/s of the 5 runs (the null adapter's vary too much)
def scaled(f, name):
    x = copy.deepcopy(d)
    for j in x['jobs']:
        for r, v in zip(j['repeats'], runs):
            r['rps'] = v * f
        j['rps'] = j['rps_median'] = 10000.0 * f
        j['rps_min'], j['rps_max'] = 9900.0 * f, 10100.0 * f
    json.dump(x, open(name, 'w'))
scaled(1, 'base.json')
scaled(0.8, 'slower.json')
scaled(1e6, 'much-faster.json')
scaled(1e-6, 'much-slower.json')
PY
check "compare: 20% slower is a regression, exit 3" 3 "null nop +req/s 0.80 \(95% CI 0.7[89]-0.8[01], p=0.0079, 5 vs 5 runs\): slower; REGRESSION: req/s more than 10% lower" -- "$bin" compare base.json slower.json --max-regression 10%
check "compare: the table says slower" 3 "^null nop .* 0.80  0.7[89]-0.8[01]  0.0079  slower" -- "$bin" compare base.json slower.json --max-regression 10%
check "compare: within a 25% threshold: exit 0" 0 "gate passed: 1 rows within the thresholds" -- "$bin" compare base.json slower.json --max-regression 25%
check "compare: faster passes" 0 "faster; ok" -- "$bin" compare slower.json base.json --max-regression 10%
check "compare: no gate, no exit 3" 0 "slower" -- "$bin" compare base.json slower.json
check "compare: bad threshold" 2 "^mwbench compare: --max-regression expects a percentage above 0 and up to 1000% \(10%\), got 'ten'$" -- "$bin" compare base.json slower.json --max-regression ten
check "run --baseline: slower than the baseline, exit 3" 3 "gate FAILED: 1 of 1 rows regressed" -- "$bin" run ok.toml --baseline much-faster.json --no-save
check "run --baseline: repeats as often as the baseline" 3 "null nop .*5 vs 5 runs" -- "$bin" run ok.toml --baseline much-faster.json --no-save
check "run --baseline: faster passes" 0 "gate passed: 1 rows within the thresholds" -- "$bin" run ok.toml --baseline much-slower.json --no-save
printf '[[job]]\nadapter = "null"\nname = "another"\nn = 1000\n' >another.toml
check "run --baseline: unmatched rows are not gated" 0 "another +only in this run: not gated" -- "$bin" run ok.toml another.toml --baseline much-slower.json --no-save
# Rows are matched by job name: the same job with other parameters is still gated against its baseline row;
# a baseline row with no job of its name is named.
printf '[[job]]\nadapter = "null"\nn = 1000\nclients = 2\n' >c2.toml
check "run --baseline: matched by name across parameters" 3 "gate FAILED: 1 of 1 rows regressed" -- "$bin" run c2.toml --baseline much-faster.json --no-save
check "run --baseline: baseline rows with no match are named" 0 "^1 of 1 baseline rows have no job of the same name in this run \(not gated\): 'null nop'$" -- "$bin" run another.toml --baseline much-slower.json --no-save
check "run --baseline: the unmatched row" 0 "null nop +no match in this run: not gated" -- "$bin" run another.toml --baseline much-slower.json --no-save
printf '[[job]]\nadapter = "null"\nn = 1000\n\n[[job]]\nadapter = "null"\nn = 1000\nclients = 2\n' >twice.toml
"$bin" run twice.toml --repeat 5 --json twice.json --no-save -q >/dev/null 2>&1
check "compare: names held twice fall back to what the jobs measured" 0 "gate passed: 2 rows within the thresholds" -- "$bin" compare twice.json twice.json --max-regression 50%
check "run --baseline: the gate's verdict said on stderr" 3 "mwbench: BASELINE GATE FAILED: see the rows marked REGRESSION; exit 3" -- "$bin" run ok.toml --baseline much-faster.json --no-save
"$bin" run ok.toml --baseline much-faster.json --json gated.json --no-save >/dev/null 2>&1
if python3 -c "
import json; d = json.load(open('gated.json'))
assert d['exit_code'] == 3, d['exit_code']
assert d['gate']['passed'] is False and 'REGRESSION' in d['gate']['text'], d.get('gate')" 2>&1; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL: run --baseline: the result file's exit_code and gate"
fi
check "run --max-regression needs --baseline" 2 "^mwbench run: --max-regression and --max-latency-regression need --baseline BASE.json$" -- "$bin" run ok.toml --max-regression 10% --no-save
check "run --baseline: not a result file" 2 "^mwbench run: ok.toml: not JSON$" -- "$bin" run ok.toml --baseline ok.toml --no-save

finish gate
