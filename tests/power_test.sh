#!/usr/bin/env bash
# --crash power from the command line: a SIGKILLed mwbench leaves no page-cache mount (nor its
# directory) behind, and the bad inputs (an external server, no /dev/fuse) are one line, exit 2.
set -u
bin="$1"
source "$(dirname "$0")/lib.sh"

# mounts_of PID: the page-cache mounts whose layer directory names PID as its owner (its marker,
# owner.pid: "mwbench-pagecache-layer PID START")
mounts_of() {
  local mp tag owner
  awk '$0 ~ / - fuse.mwbench-pagecache / {print $5}' /proc/self/mountinfo | while read -r mp; do
    read -r tag owner _ <"$(dirname "$mp")/owner.pid" 2>/dev/null && [ "$owner" = "$1" ] && echo "$mp"
  done
}

# mount_of_run PID: the layer of mwbench PID, once mounted (30 s at most); "" when none came
mount_of_run() {
  local mp=""
  for ((i = 0; i < 300; i++)); do
    mp="$(mounts_of "$1" | head -1)"
    [ -n "$mp" ] && break
    sleep 0.1
  done
  echo "$mp"
}

# gone_within DIR: the layer at DIR/data unmounted and DIR removed within 10 s
gone_within() {
  for ((i = 0; i < 100; i++)); do
    grep -q " $1/data " /proc/self/mountinfo || [ -e "$1" ] || return 0
    sleep 0.1
  done
  return 1
}

# 1. SIGKILL during a power run: the daemon unmounts and removes the layer's directory.
"$bin" redis --ops set -n 3000000 --keyspace 3000000 --crash power --crash-at 100% --persistence aof-everysec \
  --quiet --no-save >out.txt 2>&1 &
pid=$!
mp="$(mount_of_run "$pid")"
if [ -z "$mp" ]; then
  bad "no page-cache mount of mwbench $pid appeared"
else
  ok
  sleep 0.5
  kill -KILL "$pid" || bad "mwbench $pid ended before its SIGKILL: $(head -3 out.txt)"
  wait "$pid" 2>/dev/null
  for ((i = 0; i < 100; i++)); do
    grep -q " $mp " /proc/self/mountinfo || [ -e "$(dirname "$mp")" ] || break
    sleep 0.1
  done
  if grep -q " $mp " /proc/self/mountinfo; then bad "$mp still mounted after SIGKILL of mwbench"; else ok; fi
  if [ -e "$(dirname "$mp")" ]; then bad "$(dirname "$mp") left behind"; else ok; fi
fi

# 2. A Ctrl-C, then SIGKILL during the teardown that follows: nothing stays either. The daemon,
# told to stop, removes the layer's directory itself; when mwbench removed it after the daemon's
# exit, a SIGKILL in between left an empty mwbench-pc-* directory until the next run. The delays
# cover the teardown on a loaded machine as on a quiet one.
for delay in 0.03 0.06 0.09 0.12 0.15 0.2 0.3; do
  "$bin" redis --ops set -n 3000000 --keyspace 3000000 -c 4 --crash power --quiet --no-save >out.txt 2>&1 &
  pid=$!
  mp="$(mount_of_run "$pid")"
  [ -n "$mp" ] || { bad "no page-cache mount of mwbench $pid appeared: $(head -3 out.txt)"; kill -KILL "$pid"; wait "$pid"; continue; }
  sleep 1
  kill -INT "$pid"
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if gone_within "$(dirname "$mp")"; then ok; else bad "SIGINT, SIGKILL $delay s later: $(dirname "$mp") left behind"; fi
done

# 3. A page-cache mount mwbench did not make (its daemon started by hand, as any user may, in a
# directory holding other files) is not mwbench's: a power run, and the clean-up before its
# layer, leave the mount, the directory and its files alone. So does that daemon when the process
# that started it dies: it unmounts and removes nothing. (A power run detached such a mount and
# removed its whole directory; the orphaned daemon removed its mount point's parent.)
daemon="$(dirname "$bin")/mwbench-pagecache"
foreign="$work/foreign"
mkdir -p "$foreign/disk" "$foreign/data" "$foreign/orphan/disk" "$foreign/orphan/data"
echo keep >"$foreign/keep.txt"
echo keep >"$foreign/orphan/keep.txt"
mkfifo "$work/ctl"
exec 3<>"$work/ctl"
"$daemon" "$foreign/disk" "$foreign/data" 3 writeback &
hand=$!
for ((i = 0; i < 100; i++)); do grep -q " $foreign/data " /proc/self/mountinfo && break; sleep 0.1; done
"$bin" redis --ops set -n 2000 --keyspace 2000 --crash power --quiet --no-save >out.txt 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then ok; else bad "power run beside a hand-made mount: exit $rc: $(head -3 out.txt)"; fi
if grep -q " $foreign/data " /proc/self/mountinfo; then ok; else bad "the power run detached $foreign/data"; fi
if [ "$(cat "$foreign/keep.txt" 2>/dev/null)" = keep ]; then ok; else bad "the power run removed $foreign"; fi
bash -c '"$0" "$1/disk" "$1/data" 4 writeback 4<>"$2" &
  for ((i = 0; i < 100; i++)); do grep -q " $1/data " /proc/self/mountinfo && break; sleep 0.1; done' \
  "$daemon" "$foreign/orphan" "$work/ctl"
for ((i = 0; i < 100; i++)); do grep -q " $foreign/orphan/data " /proc/self/mountinfo || break; sleep 0.1; done
if grep -q " $foreign/orphan/data " /proc/self/mountinfo; then bad "the orphaned daemon did not unmount"; else ok; fi
if [ "$(cat "$foreign/orphan/keep.txt" 2>/dev/null)" = keep ]; then ok; else bad "the orphaned daemon removed $foreign/orphan"; fi
echo stop >&3
wait "$hand" 2>/dev/null
umount -l "$foreign/data" "$foreign/orphan/data" 2>/dev/null
exec 3>&-
if [ "$(cat "$foreign/keep.txt" 2>/dev/null)" = keep ]; then ok; else bad "the daemon, told to stop, removed $foreign"; fi

# 4. Bad input: one line, exit 2.
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
