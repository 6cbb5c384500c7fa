#!/usr/bin/env bash
# Issue 10, class 7: values that are accepted but meaningless or crash. Each hostile value must
# end the run before it starts: exit 2 and one line naming the option and the accepted range.
set -u
bin="$1"
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh"
check() {  # check NAME PATTERN -- mwbench-arguments...   (expects exit 2 and at most 3 lines)
  local name="$1" pattern="$2"
  shift 3
  local out rc
  out="$(timeout 20 "$bin" "$@" --no-save 2>&1)"
  rc=$?
  if [ "$rc" -eq 2 ] && grep -qE -- "$pattern" <<<"$out" && [ "$(grep -c . <<<"$out")" -le 3 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    printf 'FAIL: %s (exit %s, wanted 2; pattern %s)\n%s\n' "$name" "$rc" "$pattern" "$out"
  fi
}

# the driver's numbers
check "-n 0" "-n: n expects a whole number from 1 to 1000000000000" -- null -n 0
check "-n -1" "-n: n expects a whole number from 1 to" -- null -n -1
check "-n 1e30" "-n: n expects a whole number from 1 to" -- null -n 1e30
check "-c 0" "--clients: clients expects a whole number from 1 to 10000" -- null -c 0
check "-c 4294967297 (int overflow)" "--clients: clients expects a whole number from 1 to 10000 .*got '4294967297'" -- null -c 4294967297
check "-c list with an overflow" "--clients: clients expects a whole number from 1 to 10000" -- null -c 1,4294967297
check "-P 4294967297 (int overflow)" "--pipeline: pipeline expects a whole number from 1 to 65536" -- null -P 4294967297
check "-P 65537" "--pipeline: pipeline expects a whole number from 1 to 65536" -- null -P 65537
check "--threads 4294967297" "--threads: threads expects a whole number from 1 to 1024" -- null --threads 4294967297
check "--threads 0" "--threads: threads expects a whole number from 1 to 1024" -- null --threads 0
check "--rate -5" "--rate: rate expects a number from 0 to 1000000000" -- null --rate -5
check "--rate nan" "--rate: rate expects a number from 0 to 1000000000" -- null --rate nan
check "--rate inf" "--rate: rate expects a number from 0 to 1000000000" -- null --rate inf
check "--rate 1e400 (used to abort)" "--rate: rate expects a number from 0 to 1000000000" -- null --rate 1e400
check "--duration 0" "--duration: duration expects a time from 1ms to 720h" -- null --duration 0
check "--duration -1s" "--duration: duration expects a time from 1ms to 720h" -- null --duration -1s
check "--duration nan" "--duration: duration expects a time from 1ms to 720h" -- null --duration nan
check "--timeout 0" "--timeout: timeout expects a time from 1ms to 24h" -- null --timeout 0
check "--timeout nan" "--timeout: timeout expects a time from 1ms to 24h" -- null --timeout nan
check "--warmup nan" "--warmup: warmup expects a count of ops from 0 to 1000000000000 or a time from 0 to 720h" -- null --warmup nan
check "--warmup -5" "--warmup: warmup expects a count of ops" -- null --warmup -5
check "--warmup 5x" "--warmup: warmup expects a count of ops" -- null --warmup 5x
check "--repeat 4294967297" "repeat|4294967297" -- null --repeat 4294967297
check "--repeat x jobs over the cap" "--repeat 1000 x 20 jobs = 20000 job runs; at most 10000" -- null -c 1,2,3,4,5,6,7,8,9,10 -P 1,2 --repeat 1000

# every adapter's numbers
check "tc --keyspace 0 (was SIGFPE)" "--keyspace: keyspace expects a whole number from 1 to" -- tc --keyspace 0
check "tc --cache over int32" "--cache: cache expects a whole number from 0 to 2147483647" -- tc --cache 3000000000
check "tc --value-size 1G" "--value-size: expected a whole number from 1 to 67108864" -- tc --value-size 1G
check "disk --bs 0" "--bs: bs expects a whole number from 1 to 64M" -- disk --bs 0
check "disk --size 0" "--size: size expects a whole number from 1 to" -- disk --size 0
check "disk --mix 101" "--mix: mix expects a whole number from 0 to 100" -- disk --mix 101
check "redis --value-size 1G" "--value-size: value-size expects a whole number from 0 to 512M" -- redis --value-size 1G
check "redis --keyspace 0" "--keyspace: keyspace expects a whole number from 1 to" -- redis --keyspace 0
check "redis --port 70000" "--port: port expects a whole number from 1 to 65535" -- redis --port 70000
check "sqlite --rows 0" "--rows: rows expects a whole number from 1 to" -- sqlite --rows 0
check "sqlite --batch 0" "--batch: batch expects a whole number from 1 to 10000" -- sqlite --batch 0
check "couchdb --batch 0" "--batch: batch expects a whole number from 1 to 10000" -- couchdb --batch 0
check "couchdb --keyspace 0" "--keyspace: keyspace expects a whole number from 1 to" -- couchdb --keyspace 0
check "gearman --workers 0" "--workers: workers expects a whole number from 1 to 10000" -- gearman --workers 0
check "gearman --payload-size 1G" "--payload-size: payload-size expects a whole number from 0 to 16M" -- gearman --payload-size 1G
check "gearman --mysql-port 0" "--mysql-port: mysql-port expects a whole number from 1 to 65535" -- gearman --mysql-port 0
check "null --fail-every -1" "--fail-every: fail-every expects a whole number from 0 to" -- null --fail-every -1

# disk --file that cannot hold one block (was SIGFPE), or is not a file (a FIFO used to hang)
head -c 100 /dev/urandom >small.dat
check "disk --file smaller than --bs" "disk: --file small.dat has 100 bytes, less than one --bs block \(4096\)" -- disk --file small.dat --ops read -n 10 -q
: >empty.dat
check "disk --file empty" "disk: --file empty.dat has 0 bytes, less than one --bs block" -- disk --file empty.dat --ops read -n 10 -q
mkfifo disk.fifo
check "disk --file FIFO" "disk: --file disk.fifo is neither a regular file nor a block device" -- disk --file disk.fifo --ops read -n 10 -q

# suites: numbers in TOML, unknown defaults, job counts, size, depth, file kinds
printf '[[job]]\nadapter = "null"\nn = 1e30\n' >float.toml
check "TOML n = 1e30" "float.toml:3: n expects a whole number from 1 to 1000000000000" -- run float.toml
printf '[[job]]\nadapter = "null"\nclients = 9223372036854775807\n' >bigint.toml
check "TOML clients = INT64_MAX" "bigint.toml:3: clients expects a whole number from 1 to 10000" -- run bigint.toml
printf '[[job]]\nadapter = "null"\nrate = -inf\n' >rate.toml
check "TOML rate = -inf" "rate.toml:3: rate expects a number from 0 to 1000000000" -- run rate.toml
printf '[[job]]\nadapter = "tc"\nkeyspace = 0\n' >tc.toml
check "TOML tc keyspace = 0" "tc.toml:3: keyspace expects a whole number from 1" -- run tc.toml
printf '[defaults]\nclientz = 4\n\n[[job]]\nadapter = "null"\n' >defaults.toml
check "unknown key in [defaults]" "defaults.toml:2: unknown key 'clientz' in \[defaults\]" -- run defaults.toml
python3 -c "
v = ','.join(str(i) for i in range(1, 1001))
print('[[job]]\nadapter = \"null\"\nclients = [' + v + ']\npipeline = [' + v + ']')" >many.toml
check "a list of 1,000,000 jobs" "many.toml:2: the lists expand to 1000000 jobs \(1000 clients x 1000 pipeline\); a run may have at most 10000 jobs" -- run many.toml
check "1,000,000 jobs on the command line" "the lists expand to 1000000 jobs" -- null -c "$(seq -s, 1000)" -P "$(seq -s, 1000)"
python3 -c "print('[' + 'a.' * 100000 + 'a]')" >deep.toml
check "100,000-deep table header (was a segfault)" "deep.toml:1: nested 65 levels deep .*; a suite may nest at most 64" -- run deep.toml
python3 -c "print('a.' * 100000 + 'a = 1')" >dotted.toml
check "100,000-deep dotted key (was a segfault)" "dotted.toml:1: nested 65 levels deep" -- run dotted.toml
head -c 5000000 /dev/zero | tr '\0' '#' >big.toml
check "a 5 MB suite" "big.toml: 5000000 bytes; a suite file may have at most 4 MiB" -- run big.toml
mkdir dir.toml
check "a directory as a suite" "dir.toml: is a directory; a suite is a TOML file" -- run dir.toml
mkfifo fifo.toml
check "a FIFO as a suite (used to block)" "fifo.toml: is a FIFO; a suite is a TOML file" -- run fifo.toml
check "a device as a suite" "/dev/zero: is a device; a suite is a TOML file" -- run /dev/zero

finish limits
