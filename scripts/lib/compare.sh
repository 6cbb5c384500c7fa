# Helpers of the peer-comparison scripts (sourced, not run).

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The median of the arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# A / B with two decimals, 0 when B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }

# user+sys CPU seconds of process PID so far (/proc/PID/stat).
proc_cpu() { awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15) / t}' "/proc/$1/stat"; }

# run_timed KEY CMD...: runs CMD, its stdout to $dir/out, and records the client's user and system
# CPU seconds (getrusage of the child, by /usr/bin/time) in cpu_user[KEY] and cpu_sys[KEY], and,
# when $server_pid is set (a server the script started), the server's user+sys CPU seconds over
# the run in cpu_server[KEY]. The caller declares the three associative arrays (declare -A).
run_timed() {
  local key=$1 s0=0 s1=0 u s
  shift
  [ -n "${server_pid:-}" ] && s0=$(proc_cpu "$server_pid")
  /usr/bin/time -f "%U %S" -o "$dir/rusage" "$@" >"$dir/out" 2>/dev/null || true
  [ -n "${server_pid:-}" ] && s1=$(proc_cpu "$server_pid")
  read -r u s <"$dir/rusage" || true
  cpu_user[$key]=${u:-0} cpu_sys[$key]=${s:-0}
  cpu_server[$key]=$(awk -v a="$s0" -v b="$s1" 'BEGIN {print b - a}')
}

# us_per_op SECONDS OPS: microseconds per op, two decimals.
us_per_op() { awk -v s="$1" -v n="$2" 'BEGIN {printf "%.2f", (n > 0 ? s * 1e6 / n : 0)}'; }

# decide_between LABEL 'PEER' 'MWBENCH' [OPTIONS...]: the peer (the baseline) and mwbench as the two
# alternatives of `mwbench decide OPTIONS` (paired rounds, a ratio with its interval, a verdict;
# docs/guide/decisions.md). Each is a call of the calling script's shell functions that prints its
# figure (higher is better) on a line of its own, 0 or nothing when the run failed (never data).
# They run in bash with every function of the script and the variables named in $decide_vars;
# $bin is mwbench, $decide_dir a scratch directory. Prints the decision's lines under LABEL, the
# commands shown as "peer: PEER" and "mwbench: MWBENCH" ($decide_names "NAME NAME" names the two
# sides otherwise, where both are mwbench's); returns mwbench decide's exit code.
decide_between() {
  local label=$1 peer=$2 mine=$3 env="$decide_dir/decide-env.sh" rc=0 na nb
  read -r na nb <<<"${decide_names:-peer mwbench}"
  shift 3
  # shellcheck disable=SC2086
  { declare -p $decide_vars; declare -f; } >"$env"
  local a="bash -c '. $env; $peer'" b="bash -c '. $env; $mine'"
  "$bin" decide "$a" "$b" --metric '^([0-9.]+)$' --higher-is-better -q --no-save "$@" >"$decide_dir/decision.txt" || rc=$?
  echo "$label:"
  awk -v a="$a" -v b="$b" -v pa="$na: $peer" -v pb="$nb: $mine" '
    function swap(s, from, to,   i) { i = index(s, from); return i ? substr(s, 1, i - 1) to substr(s, i + length(from)) : s }
    { print "  " swap(swap($0, a, pa), b, pb) }' "$decide_dir/decision.txt"
  return $rc
}

# decide_check OPTIONS...: whether `mwbench decide` takes OPTIONS (-D's), asked before anything
# starts (its --json /dev/full stops it after the options are read, before any run); when it does
# not, its one line and exit 2.
decide_check() {
  local err
  err=$("$bin" decide 'echo 1' 'echo 1' --metric '^([0-9.]+)$' --higher-is-better -q --no-save "$@" --json /dev/full 2>&1 >/dev/null) || true
  case $err in *"--json /dev/full"*) return 0 ;; esac
  echo "${0##*/}: -D: $(head -1 <<<"$err")" >&2
  exit 2
}

# check_words OPTION REGEX EXPECTED 'WORDS': each word of WORDS (at least one) is all of REGEX;
# else one line naming OPTION and what it expects (EXPECTED), and exit 2.
check_words() {
  local w ws
  read -r -a ws <<<"$4"
  ((${#ws[@]})) || { echo "${0##*/}: $1 expects $3, got nothing" >&2; exit 2; }
  for w in "${ws[@]}"; do
    [[ $w =~ ^($2)$ ]] || { echo "${0##*/}: $1 expects $3, got '$w'" >&2; exit 2; }
  done
}

# figure: the first field of the last line of its input as a decision's figure (%.1f: never in
# e-notation), 0.0 when there is none.
figure() { awk '{r = $1} END {printf "%.1f\n", r}'; }

# The load averages of the last 1, 5 and 15 minutes.
load_now() { cut -d' ' -f1-3 /proc/loadavg; }
