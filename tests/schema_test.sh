#!/usr/bin/env bash
# The result file's JSON Schema (docs/reference/result-schema.json, made by `mwbench help --schema`
# from the field tables of src/results/): the committed copy is the one this build makes, and every
# committed example result, a fresh run of the quick suite and the runs below validate against it
# with an independent validator, python3-jsonschema (scripts/setup installs it).
#   schema_test.sh MWBENCH SOURCE_DIR
set -u
bin="$1"
src="$2"
source "$(dirname "$0")/lib.sh"
if ! /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
  echo "schema: python3-jsonschema is not installed (scripts/setup installs it)"
  echo "schema: 0 passed, 1 failed"
  exit 1
fi
committed="$src/docs/reference/result-schema.json"
if "$bin" help --schema >schema.json && cmp -s schema.json "$committed"; then
  ok
else
  bad "$committed is not what 'mwbench help --schema' writes: run it and commit the file"
  diff schema.json "$committed" | head -20
fi

# Fresh runs: the quick suite (servers it lacks are skipped jobs, which the schema holds too), a
# workload with its ops, sides, series, a repeat, an SLO, a capacity search, a merge of two, and
# a job with --reconnect-every (its connect object).
"$bin" run quick --json quick.json --no-save -q >/dev/null 2>&1
"$bin" null -n 2000 -c 2 --mix read:50,update:50 --keys zipfian --keyspace 1000 --interval 100ms --repeat 2 \
  --slo 'p99<1s' --json mix.json --no-save -q >/dev/null 2>&1
"$bin" disk --path "$work" --size 1M --bs 4k -n 200 --json disk.json --no-save -q >/dev/null 2>&1
"$bin" null --find-max 'p99<50ms' --step-duration 100ms --find-precision 50% --find-repeat 1 --json capacity.json --no-save -q >/dev/null 2>&1
"$bin" null -n 1000 --json a.json --no-save -q >/dev/null 2>&1
"$bin" null -n 1000 --json b.json --no-save -q >/dev/null 2>&1
"$bin" merge a.json b.json --json merged.json -q >/dev/null 2>&1
"$bin" echo -n 200 --reconnect-every 1 --connect-rate 10000 --json connect.json --no-save -q >/dev/null 2>&1

/usr/bin/python3 - "$committed" "$src"/results/examples/*.json quick.json mix.json disk.json capacity.json \
  merged.json connect.json <<'PY'
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
failed = 0
for path in sys.argv[2:]:
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        print("FAIL: %s: not written or not JSON: %s" % (path, e))
        failed += 1
        continue
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errors[:5]:
        print("FAIL: %s: %s: %s" % (path, "/".join(map(str, e.absolute_path)), e.message[:300]))
    failed += bool(errors)
    print("%s: %s" % (path, "invalid" if errors else "valid"))
sys.exit(1 if failed else 0)
PY
if [ $? -eq 0 ]; then ok; else bad "a result file does not validate against the schema"; fi
finish schema
