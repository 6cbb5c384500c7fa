#!/usr/bin/env bash
# Issue 10, class 9: secrets given on the command line or in a suite never appear in what
# mwbench prints or writes: stdout, stderr, --json, the results directory, compare, the HTML
# report. Every target is a refused loopback port, so nothing is really contacted.
set -u
bin="$1"
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh"

# run NAME ARGS...: one mwbench run, its output kept for the grep at the end (-v: every note it has)
n=0
run() {
  local name="$1"
  shift
  n=$((n + 1))
  timeout 60 "$bin" "$@" -v --json "out$n.json" --results-dir res >"stdout$n.txt" 2>"stderr$n.txt"
  local rc=$?
  if [ "$rc" -ge 124 ] || [ ! -s "out$n.json" ]; then bad "$name: exit $rc, no out$n.json"; else ok; fi
}

run "http: URL credentials and auth headers" \
  http --url http://u:SECRET1@127.0.0.1:1/ --header 'Authorization: Bearer SECRET2' --header 'Proxy-Authorization: Basic SECRET3' \
  --header 'Cookie: session=SECRET4' --header 'X-Api-Key: SECRET5' --header 'X-Auth-Token: SECRET6' -n 3 --timeout 1s
run "http: a URL without a scheme" http --url u:SECRET7@127.0.0.1:1/ -n 2 --timeout 1s
run "http: the = forms" http --url=http://u:SECRET8@127.0.0.1:1/x --header='Authorization: SECRET9' -n 2 --timeout 1s
run "http: a token in the query string" http --url 'http://127.0.0.1:1/?access_token=SECRET10&x=1' -n 2 --timeout 1s
run "gearman: --mysql-password=" gearman --mysql-password=SECRET11 --queue mysql --mysql-host 127.0.0.1 --mysql-port 1 -n 3 --timeout 2s
run "gearman: --mysql-password VALUE" gearman --mysql-password SECRET12 --queue mysql --mysql-host 127.0.0.1 --mysql-port 1 -n 3 --timeout 2s
run "gearman: --pg-conninfo password=" gearman --pg-conninfo 'host=127.0.0.1 port=1 user=u password=SECRET13' --queue postgres -n 3 --timeout 2s
run "gearman: --pg-conninfo quoted password" gearman --pg-conninfo "host=127.0.0.1 port=1 password='SECRET14 x'" --queue postgres -n 3 --timeout 2s
run "gearman: --pg-conninfo URL" gearman --pg-conninfo 'postgresql://u:SECRET15@127.0.0.1:1/db?sslpassword=SECRET16' --queue postgres -n 3 --timeout 2s
run "couchdb: a URL without a scheme" couchdb --url u:SECRET17@127.0.0.1:1/db -n 3 --timeout 1s
run "couchdb: a URL with credentials" couchdb --url http://admin:SECRET18@127.0.0.1:1/db -n 3 --timeout 1s
run "couchdb: URL lists (side by side)" couchdb --url http://a:SECRET19@127.0.0.1:1/db,http://b:SECRET20@127.0.0.1:2/db -n 3 --timeout 1s
# where a secret is, not the secret (issue 39): file:PATH and env:VAR
printf 'SECRET27\n' >pw.txt
run "gearman: --mysql-password file:PATH" gearman --mysql-password file:pw.txt --queue mysql --mysql-host 127.0.0.1 --mysql-port 1 -n 3 --timeout 2s
MWB_CONNINFO='host=127.0.0.1 port=1 password=abc SECRET28' \
  run "gearman: --pg-conninfo env:VAR, an unquoted space in its password" gearman --pg-conninfo env:MWB_CONNINFO --queue postgres -n 3 --timeout 2s

# a suite: the secrets are in the file, so they reach params, names and messages only
cat >secret.toml <<'EOF'
[defaults]
timeout = "1s"
n = 2

[[job]]
adapter = "http"
url = ["http://u:SECRET21@127.0.0.1:1/", "u:SECRET22@127.0.0.1:2/"]
header = ["Authorization: Bearer SECRET23", "Cookie: SECRET24"]

[[job]]
adapter = "gearman"
queue = "mysql"
mysql_host = "127.0.0.1"
mysql_port = 1
mysql_password = "SECRET25"
EOF
run "a suite with secrets" run secret.toml

# a bad value echoed in an error must not echo the secret either
timeout 20 "$bin" couchdb --url u:SECRET26@127.0.0.1:1/db --batch 0 --no-save >stdout_err.txt 2>stderr_err.txt
[ $? -eq 2 ] && ok || bad "a config error exits 2"

# compare and the HTML report of what was written
timeout 20 "$bin" compare out1.json out5.json >compare.txt 2>&1 || bad "compare failed"
timeout 20 "$bin" report out*.json --html report.html --svg svg >report.txt 2>&1 && [ -s report.html ] && ok || bad "report failed"

# mwbench's own command line in the process list: the redacted form, and one warning on stderr
"$bin" null --duration 30s --name 'probe password=SECRET29 SECRET30' --no-save -q >title.out 2>title.err &
pid=$!
for _ in $(seq 100); do grep -q 'warning' title.err && break; sleep 0.1; done
tr '\0' ' ' <"/proc/$pid/cmdline" >title.txt
kill -INT "$pid"
wait "$pid"
grep -q "^$bin null --duration 30s --name probe password=\*\*\*  *--no-save -q *$" title.txt && ok ||
  bad "the process list showed [$(cat title.txt)]"
warning='mwbench: warning: a secret on the command line (%s): every user of this machine can read command lines in the process list; give it as env:VAR or file:PATH instead (or in a suite file; see README, Passwords)'
one_warning() {  # one_warning FILE OPTIONS: exactly one warning line, naming OPTIONS
  local want
  want="$(printf "$warning" "$2")"
  [ "$(grep -cxF -- "$want" "$1")" -eq 1 ] && ok || bad "$1: not one warning naming $2: $(cat "$1")"
}
one_warning title.err --name
one_warning stderr5.txt --mysql-password
one_warning stderr6.txt --mysql-password
one_warning stderr1.txt "--url, --header"
for f in stderr13.txt stderr14.txt stderr15.txt; do  # file:, env: and a suite: no warning
  grep -q 'warning: a secret' "$f" && bad "$f: a warning: $(cat "$f")" || ok
done

# the secrets appear nowhere; the redacted forms do
everything=(stdout*.txt stderr*.txt out*.json res compare.txt report.txt report.html svg title.*)
if grep -rn "SECRET" "${everything[@]}"; then
  bad "a secret leaked (above)"
else
  ok
fi
[ "$(ls res/*.json | wc -l)" -eq 15 ] && ok || bad "expected 15 result files in res/"
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>&1; }
want() {  # want FILE EXPR EXPECTED
  local got
  got="$(field "$1" "$2")"
  [ "$got" = "$3" ] && ok || bad "$1 $2: got [$got], wanted [$3]"
}
want out1.json "d['command']" "http --url http://127.0.0.1:1/ --header 'Authorization: ***' --header 'Proxy-Authorization: ***' --header 'Cookie: ***' --header 'X-Api-Key: ***' --header 'X-Auth-Token: ***' -n 3 --timeout 1s -v --json out1.json --results-dir res"
want out1.json "d['jobs'][0]['params']['header']" "$(printf 'Authorization: ***\nProxy-Authorization: ***\nCookie: ***\nX-Api-Key: ***\nX-Auth-Token: ***')"
want out2.json "d['jobs'][0]['target']" "127.0.0.1:1/"
want out5.json "d['command'].split(' --queue')[0]" "gearman --mysql-password=***"
want out5.json "d['jobs'][0]['params']['mysql-password']" "***"
want out7.json "d['jobs'][0]['params']['pg-conninfo']" "host=127.0.0.1 port=1 user=u password=***"
want out9.json "d['jobs'][0]['params']['pg-conninfo']" "postgresql://127.0.0.1:1/db?sslpassword=***"
want out13.json "d['command'].split(' --queue')[0]" "gearman --mysql-password file:pw.txt"
want out13.json "d['jobs'][0]['params']['mysql-password']" "***"
want out14.json "d['jobs'][0]['params']['pg-conninfo']" "host=127.0.0.1 port=1 password=***"
want out14.json "d['jobs'][0]['state']" "setup-failed"
grep -q 'couchdb: --url expects http://host:port\[/db\], got .127.0.0.1:1/db' stdout10.txt stderr10.txt && ok ||
  bad "couchdb's message about a scheme-less URL: $(cat stdout10.txt stderr10.txt)"
grep -q "got '127.0.0.1:1/db'\|batch expects" stderr_err.txt && ok || bad "config error text: $(cat stderr_err.txt)"

finish secrets
