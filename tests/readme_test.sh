#!/usr/bin/env bash
# The docs' own examples (issue 24 item 15, issue 40): every `$ ... mwbench ...` line of a code
# block of every page (README.md, CONTRIBUTING.md, docs/**/*.md, adapters/*/README.md) is run here,
# or checked without running, or skipped for a reason this file names; and every relative link
# between the pages resolves (tests/doc_links.py).
# - Run, made short (null as written: it takes milliseconds): -n at most 200, --keyspace at most 1000, --duration X becomes -n 200 (kept,
#   at most 1s, beside --interval), -c at most 4, --repeat 1, nothing saved. Its exit status must
#   be the page's (its `echo $?` line, or the sample's kind: a usage or set-up error 2, FAILED 1,
#   else 0), its job names the sample table's, and `list`'s adapters the sample's.
# - Checked without running: a suite (`run configs/X.toml`, minutes long) and the commands of
#   adapters whose servers take seconds to start (rabbitmq, postgres, mariadb, couchdb, nats,
#   gearman, beanstalkd, mqtt) are run with an unwritable --json: every option and the suite are
#   accepted, the jobs expanded, and the run ends there (exit 2 naming --json), before any job.
set -u
bin="$1"
src="$2"
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh"
ln -s "$src/configs" configs
ln -s "$src/results" results
heavy="rabbitmq postgres mariadb couchdb nats gearman beanstalkd mqtt"
available="$("$bin" list 2>/dev/null | awk 'NR > 1 && !/unavailable|not in this build/ {print $1}')"

# Why a command is not run here ("" when it is).
skip_reason() {
  case "$1" in
    *redis.example.com* | *redis.internal*) echo "an external server of the docs' own network" ;;
    *mpirun* | *srun*) echo "MPI (tests/mpi_test.sh runs it)" ;;
    *"run vm-sanity"*) echo "the installed .deb's binary (tests/install_test.sh loads vm-sanity by name)" ;;
    *--baseline*) echo "a 25 s suite against a baseline (tests/gate_test.sh gates)" ;;
    *--find-max*--step-duration*) echo "a capacity search: its verdict (a rate, or client-bound) is the machine's load of the moment (tests/test_capacity.cpp)" ;;
    *--crash\ power* | *--crash\ torn*) echo "the FUSE page-cache layer (tests/power_test.sh)" ;;
    *"decide "*--reconnect-every*) echo "a decision of paired 2 s rounds, half a minute at least (tests/decide_test.sh decides between commands)" ;;
    *--server-events\ off,on*--decide*) echo "the timeline's cost decided in 30 paired rounds, minutes long (tests/decide_test.sh decides)" ;;
    *"decide "*redis-benchmark*) echo "a peer tool against a Redis server (tests/decide_test.sh decides between commands)" ;;
    *--tls\ *--cacert*) echo "a TLS redis-server with a CA of its own (test_redis.cpp runs one)" ;;
    *--metrics-listen*) echo "a listener on a fixed port, scraped while the run lasts (tests/metrics_test.sh, test_metrics.cpp)" ;;
  esac
}

# The expected exit status of the command at line $2 of page $1 (its sample below it).
expected_exit() {
  awk -v at="$2" 'NR > at && /^```/ {exit} NR > at && /^\$ / && !/^\$ echo \$\?/ {exit}
    NR > at {print}' "$src/$1" >sample.txt
  local code
  code=$(awk '/^\$ echo \$\?/ {getline; print; exit}' sample.txt)
  if [ -n "$code" ]; then echo "$code"
  elif grep -qE '^mwbench [a-z]+: |SET-UP ERROR' sample.txt; then echo 2
  elif grep -qE 'SOME OPERATIONS FAILED|^FAILED' sample.txt; then echo 1
  else echo 0; fi
}

# The job names of a table: its rows' first column (up to two spaces), from the header to the
# first line that is not a row (empty, indented, or "label: ..." such as contract: or vm:).
job_names() {
  awk '/^job  / {t = 1; next} t { n = $0; sub(/  .*/, "", n); if (n == "" || n ~ /^ / || n ~ /: / || n ~ /:$/) exit; if (n != "...") print n }' "$1" |
    sort -u
}

shorten() {  # the command's words, made short (see the top)
  local out=() w prev="" interval=0
  for w in "$@"; do [ "$w" = --interval ] && interval=1; done
  for w in "$@"; do
    case "$prev" in
      -n) w=$((w > 200 ? 200 : w)) ;;
      --keyspace) w=$((w > 1000 ? 1000 : w)) ;;
      -c) [[ "$w" =~ ^[0-9]+$ ]] && w=$((w > 4 ? 4 : w)) ;;
      --repeat) w=1 ;;
    esac
    if [ "$prev" = --duration ] && [ "$interval" = 0 ]; then unset 'out[-1]'; out+=(-n 200); prev=""; continue; fi
    [ "$prev" = --duration ] && w=1s
    w="${w//\/tmp\//./}"
    out+=("$w")
    prev="$w"
  done
  printf '%s\n' "${out[@]}"
}

ran=0 loaded=0 skipped=0
try() {  # try PAGE LINE COMMAND: one command of the page's line LINE
  local page="$1" line="$2" cmd="$3" why sub missing="" prev="" w want rc
  why=$(skip_reason "$cmd")
  if [ -n "$why" ]; then skipped=$((skipped + 1)); return; fi
  mapfile -t words < <(python3 -c 'import shlex, sys; print("\n".join(shlex.split(sys.argv[1])))' "${cmd#*mwbench }")
  sub="${words[0]}"
  case "$sub" in
    run | compare | report | merge | list | null | decide | model) ;;
    *) if ! grep -qx "$sub" <<<"$available"; then skipped=$((skipped + 1)); return; fi ;;
  esac
  for w in "${words[@]}"; do  # an input the page's prose made (bad.toml): not here
    case "$prev:$w" in --json:* | --html:* | --hdr-log:*) ;;
      *.toml | *.json) [ -e "$w" ] || [ -e "configs/${w%.toml}.toml" ] || missing="$w" ;; esac
    prev="$w"
  done
  if [ -n "$missing" ]; then skipped=$((skipped + 1)); return; fi
  want=$(expected_exit "$page" "$line")
  if { [ "$sub" = run ] || grep -qw -- "$sub" <<<"$heavy"; } && [ "$want" != 2 ]; then  # accepted, not run
    check "$page:$line: $cmd: accepted" 2 "--json /dev/full: is a character device" -- "$bin" "${words[@]}" --no-save --json /dev/full
    loaded=$((loaded + 1))
    return
  fi
  mapfile -t short < <(shorten "${words[@]}")
  [ "$sub" = null ] && short=("${words[@]}")  # null runs its -n in milliseconds: as written (an SLO it must miss)
  case "$sub" in compare | report | merge | list | model) ;; *) short+=(--no-save) ;; esac
  "$bin" "${short[@]}" >out.txt 2>&1
  rc=$?
  ran=$((ran + 1))
  if [ "$rc" != "$want" ]; then
    bad "$page:$line: $cmd: exit $rc, the page says $want"
    head -5 out.txt
  elif [ "$sub" = list ] && [ "$(awk '/^[a-z]/ {print $1}' sample.txt)" != "$(awk '/^[a-z]/ {print $1}' out.txt)" ]; then
    bad "$page:$line: the list sample's adapters are not this build's"
    diff <(awk '/^[a-z]/ {print $1}' sample.txt) <(awk '/^[a-z]/ {print $1}' out.txt) | head -10
  elif [ -n "$(job_names sample.txt)" ] && [ "$(job_names sample.txt)" != "$(job_names out.txt)" ]; then
    bad "$page:$line: $cmd: its jobs are not the page's"
    diff <(job_names sample.txt) <(job_names out.txt) | head -10
  else
    ok
  fi
}

# The pages, the top README first; a command continued with \ is one command.
mapfile -t pages < <(cd "$src" && { echo README.md; echo CONTRIBUTING.md; echo results/README.md; find docs -name '*.md' | sort
  ls adapters/*/README.md; })
for page in "${pages[@]}"; do
  [ -f "$src/$page" ] || { bad "$page: missing"; continue; }
  while IFS=: read -r line text; do
    text="${text#\$ }"
    text="${text%%  #*}"
    IFS=';' read -r -a parts <<<"$text"  # `a; b`: each in turn
    for cmd in "${parts[@]}"; do
      cmd="${cmd# }"
      cmd="${cmd#flock /tmp/mwbench-bench.lock }"
      case "$cmd" in build/mwbench* | mwbench*) try "$page" "$line" "$cmd" ;; esac  # not scripts, python3, cut
    done
  done < <(awk '/^```/ {b = !b; next}
    b && /^\$ .*mwbench / { at = NR; l = $0; while (l ~ /\\$/ && (getline more) > 0) { sub(/\\$/, "", l); l = l more }; print at ":" l }' \
    "$src/$page")
done
echo "docs commands (${#pages[@]} pages): $ran run, $loaded accepted without running, $skipped skipped"
[ "$ran" -ge 20 ] && ok || bad "only $ran commands of the docs ran"
# Links between the pages: each relative link's file, and its #anchor, exist.
if python3 "$src/tests/doc_links.py" "$src" "${pages[@]}" >links.txt; then ok; else bad "broken links:"; fi
cat links.txt
finish readme
