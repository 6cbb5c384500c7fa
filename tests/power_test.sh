#!/usr/bin/env bash
# --crash power from the command line: a SIGKILLed mwbench leaves no page-cache mount (nor its
# directory) behind, and the bad inputs (an external server, no /dev/fuse) are one line, exit 2.
set -u
bin="$1"
source "$(dirname "$0")/lib.sh"

# mounts_of PID: the page-cache mounts whose layer directory names PID as its owner
mounts_of() {
  local mp
  awk '$0 ~ / - fuse.mwbench-pagecache / {print $5}' /proc/self/mountinfo | while read -r mp; do
    [ "$(cat "$(dirname "$mp")/owner.pid" 2>/dev/null)" = "$1" ] && echo "$mp"
  done
}

# 1. SIGKILL during a power run: the daemon unmounts and removes the layer's directory.
"$bin" redis --ops set -n 50000000 --crash power --crash-at 100% --persistence aof-everysec --quiet \
  >out.txt 2>&1 &
pid=$!
mp=""
for ((i = 0; i < 300; i++)); do
  mp="$(mounts_of "$pid" | head -1)"
  [ -n "$mp" ] && break
  sleep 0.1
done
if [ -z "$mp" ]; then
  bad "no page-cache mount of mwbench $pid appeared"
else
  ok
  sleep 0.5
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  for ((i = 0; i < 100; i++)); do
    grep -q " $mp " /proc/self/mountinfo || [ -e "$(dirname "$mp")" ] || break
    sleep 0.1
  done
  if grep -q " $mp " /proc/self/mountinfo; then bad "$mp still mounted after SIGKILL of mwbench"; else ok; fi
  if [ -e "$(dirname "$mp")" ]; then bad "$(dirname "$mp") left behind"; else ok; fi
fi

# 2. Bad input: one line, exit 2.
one_line() {  # one_line WHAT PATTERN CMD...: exit 2 and exactly one line on stderr matching PATTERN
  local what="$1" pattern="$2"
  shift 2
  "$@" >out.txt 2>err.txt
  local rc=$?
  if [ "$rc" -eq 2 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q -- "$pattern" err.txt; then ok
  else bad "$what: exit $rc, stderr: $(head -3 err.txt)"; fi
}
one_line "external server" "--crash power needs the store on this machine" "$bin" redis --ops set -n 10 --crash power --host 127.0.0.1 --port 1
one_line "no /dev/fuse" "--crash power: /nonexistent/fuse cannot be opened" \
  env MWBENCH_FUSE_DEVICE=/nonexistent/fuse "$bin" sqlite --ops insert -n 10 --crash power --path "$work"

finish power
