# scripts/compare-redis -m (sourced): the workload mix against plain GET and SET.
# Uses bin, port, n, repeats, mw, rb and the helpers of compare.sh from the caller.
keyspace=100000
rows=("-c 50" "-c 50 -P 16")
mix=(--mix read:90,update:10 --keys zipfian --keyspace "$keyspace" --value-size 100)
for ((k = 0; k < repeats; k++)); do
  for row in "${rows[@]}"; do
    rn=$n
    [[ $row == *-P* ]] && rn=$((n * 10))
    # shellcheck disable=SC2086
    mw["$row|mix|$k"]=$("$bin" redis --host 127.0.0.1 --port "$port" -n "$rn" $row "${mix[@]}" --csv --no-save 2>/dev/null |
      awk -F, '$3 == "mix" {print $12}')
    # shellcheck disable=SC2086
    mw["$row|get|$k"]=$("$bin" redis --host 127.0.0.1 --port "$port" -n "$rn" $row --ops get --keys random \
      --keyspace "$keyspace" --value-size 100 --csv --no-save 2>/dev/null | awk -F, '$3 == "get" {print $12}')
    # shellcheck disable=SC2086
    while IFS=, read -r op rps; do rb["$row|$op|$k"]=$rps; done < <(
      redis-benchmark -p "$port" -n "$rn" $row -r "$keyspace" -d 100 -t set,get --csv 2>/dev/null |
        awk -F, 'NR>1 {gsub(/"/,""); print tolower($1)","$2}')
  done
done
printf '%-12s %12s %12s %12s %12s %9s %9s %9s %9s\n' "row" "mw mix" "mw get" "rb get" "rb set" \
  "mix/rbGET" "mix/rbSET" "mix/90:10" "mix/mwGET"
for row in "${rows[@]}"; do
  declare -A med=()
  for key in "mw|mix" "mw|get" "rb|get" "rb|set"; do
    vals=()
    for ((k = 0; k < repeats; k++)); do
      if [ "${key%%|*}" = mw ]; then vals+=("${mw[$row|${key#*|}|$k]:-0}"); else vals+=("${rb[$row|${key#*|}|$k]:-0}"); fi
    done
    med[$key]=$(median "${vals[@]}")
  done
  # what the mix would reach if each op cost what redis-benchmark's plain op costs: 1 / (0.9/GET + 0.1/SET)
  plain=$(awk -v g="${med[rb|get]}" -v s="${med[rb|set]}" 'BEGIN {print (g > 0 && s > 0 ? 1 / (0.9 / g + 0.1 / s) : 0)}')
  printf '%-12s %12.0f %12.0f %12.0f %12.0f %9.2f %9.2f %9.2f %9.2f\n' "$row" "${med[mw|mix]}" "${med[mw|get]}" \
    "${med[rb|get]}" "${med[rb|set]}" "$(ratio "${med[mw|mix]}" "${med[rb|get]}")" \
    "$(ratio "${med[mw|mix]}" "${med[rb|set]}")" "$(ratio "${med[mw|mix]}" "$plain")" \
    "$(ratio "${med[mw|mix]}" "${med[mw|get]}")"
done
echo "mix: ${mix[*]}; redis-benchmark -r $keyspace -d 100 (uniform random keys)"
echo "redis-server $(redis-server --version | grep -o 'v=[0-9.]*'), n=$n (x10 when pipelined), median of $repeats interleaved runs"
