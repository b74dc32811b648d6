#!/usr/bin/env bash
# Late data, measured: Ingot against VictoriaMetrics on interleaved writers, and Ingot's backfill,
# overlap reads and bytes after merging. Run it through `./dev compare-late [options]`, which
# installs victoria-metrics and jq and builds ingotd and ingot-bench (Release) first.
#
# 1. Round-robin: the same ingot-bench cpu workload (--hosts H x 10 fields) dealt batch by batch
#    to N connections (--round-robin), over TCP and over HTTP, into a fresh ingotd and a fresh
#    victoria-metrics; every value must be counted back (--verify). values/s over the send time.
# 2. Backfill (Ingot): a week of history for the same series written while live data flows,
#    against the same history written alone (in order); a probe writes one point of an existing
#    series every 0.2 s over HTTP and times until a query returns it.
# 3. Overlap reads and bytes (Ingot): a range query over the round-robin data with its late chunks
#    unmerged (merging paused), then after POST /internal/force_merge; bytes per value after the
#    merge against the same data written over one connection.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/compare_late_data.sh [--values N] [--hosts H] [--no-round-robin] [--keep]

  --values N   values per round-robin run (default 10000000)
  --hosts H    hosts of the cpu workload, 10 series each (default 100)
  --no-round-robin  skip part 1 (the comparison with VictoriaMetrics)
  --keep       keep data directories and logs
EOF
}

VALUES=10000000
HOSTS=100
KEEP=0
ROUND_ROBIN=1
while (($# > 0)); do
  case "$1" in
    --values) VALUES=${2:?}; shift 2 ;;
    --hosts) HOSTS=${2:?}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --no-round-robin) ROUND_ROBIN=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "compare_late_data.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INGOTD="$ROOT/build/node/ingotd"
BENCH="$ROOT/build/bench/ingot-bench"
VM="$(command -v victoria-metrics || true)"
for tool in "$INGOTD" "$BENCH" "$VM" "$(command -v jq || true)" "$(command -v curl || true)"; do
  if [[ -z $tool || ! -x $tool ]]; then
    echo "compare_late_data.sh: missing ${tool:-victoria-metrics, jq or curl}; run ./dev compare-late" >&2
    exit 2
  fi
done

source "$(dirname "${BASH_SOURCE[0]}")/compare_lib.sh"

PROBE_PID=""
cleanup_extra() {
  if [[ -n $PROBE_PID ]]; then kill "$PROBE_PID" 2>/dev/null || true; fi
}
make_work_dir compare-late

TCP_PORT=""
HTTP_PORT=""
# start_ingot NAME [--set k=v ...] (reuses the data dir of NAME if it exists)
start_ingot() {
  local name=$1
  shift
  SERVER_NAME=ingotd
  SERVER_LOG="$WORK/$name.log"
  TCP_PORT=$(free_port)
  HTTP_PORT=$(free_port)
  "$INGOTD" --config "$ROOT/conf/ingot.toml" --data-dir "$WORK/$name" \
    --set "ingest.tcp_listen=127.0.0.1:$TCP_PORT" --set "query.http_listen=127.0.0.1:$HTTP_PORT" \
    "$@" >>"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  wait_ready "http://127.0.0.1:$HTTP_PORT/health" "$TCP_PORT"
}
start_vm() {
  local name=$1
  SERVER_NAME=victoria-metrics
  SERVER_LOG="$WORK/$name.log"
  TCP_PORT=$(free_port)
  HTTP_PORT=$(free_port)
  "$VM" -storageDataPath "$WORK/$name" -retentionPeriod 100y \
    -httpListenAddr "127.0.0.1:$HTTP_PORT" -influxListenAddr "127.0.0.1:$TCP_PORT" \
    -search.maxUniqueTimeseries 1000000 >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  wait_ready "http://127.0.0.1:$HTTP_PORT/health" "$TCP_PORT"
}

# bench NAME TARGET ARGS...: one ingot-bench ingest run verified against the running server.
bench() {
  local name=$1 target=$2
  shift 2
  local json="$WORK/$name.json"
  if ! "$BENCH" ingest --target "$target" --interval 10s --timeout 120s \
    --verify "http://127.0.0.1:$HTTP_PORT" --verify-timeout 600s --json "$json" --quiet "$@" \
    >"$WORK/$name.txt" 2>&1; then
    echo "ingot-bench $name failed:" >&2
    cat "$WORK/$name.txt" >&2
    return 1
  fi
  echo "$json"
}
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
metric() {  # metric NAME: a sample of the running ingotd's /metrics
  curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}

NOW_S=$(date +%s)
SPAN_S=$((VALUES / (HOSTS * 10) * 10))
START_S=$((NOW_S - 3600 - SPAN_S))

# 1. Round-robin
declare -A RR
for proto in tcp http; do
  ((ROUND_ROBIN)) || break
  for n in 2 4; do
    for server in ingot vm; do
      name="rr-$server-$proto-$n"
      if [[ $server == ingot ]]; then start_ingot "$name"; else start_vm "$name"; fi
      target="tcp://127.0.0.1:$TCP_PORT"
      [[ $proto == http ]] && target="http://127.0.0.1:$HTTP_PORT/write"
      log "$name: $VALUES values, $n connections, batches dealt round-robin"
      json=$(bench "$name" "$target" --connections "$n" --round-robin --points "$VALUES" \
        --hosts "$HOSTS" --start $((START_S * 1000000000)))
      RR[$name.rate]=$(jq -r '.values_per_s.mean' "$json")
      RR[$name.counted]=$(jq -r '.verify.counted_values' "$json")
      RR[$name.expected]=$(jq -r '.verify.expected_values' "$json")
      RR[$name.errors]=$(jq -r '.errors' "$json")
      if [[ $server == ingot ]]; then RR[$name.late]=$(metric ingot_points_late_total); fi
      stop_server
    done
  done
done

((ROUND_ROBIN)) && echo
((ROUND_ROBIN)) && echo "### Round-robin: $VALUES values ($HOSTS hosts x 10 fields), batches dealt to N connections"
((ROUND_ROBIN)) && echo
((ROUND_ROBIN)) && echo "| protocol | N | Ingot values/s | VictoriaMetrics values/s | ratio | Ingot counted / sent (late points) | VictoriaMetrics counted / sent |"
((ROUND_ROBIN)) && echo "|---|---|---|---|---|---|---|"
for proto in tcp http; do
  ((ROUND_ROBIN)) || break
  for n in 2 4; do
    i="rr-ingot-$proto-$n" v="rr-vm-$proto-$n"
    echo "| $proto | $n | $(calc %.0f "${RR[$i.rate]}") | $(calc %.0f "${RR[$v.rate]}") | $(calc %.2f "${RR[$i.rate]} / ${RR[$v.rate]}") | ${RR[$i.counted]} / ${RR[$i.expected]} (${RR[$i.late]}) | ${RR[$v.counted]} / ${RR[$v.expected]} |"
  done
done

# 2. Backfill (Ingot). History: HOURS of 10 s rows a week before the live data.
HIST_START_S=$((NOW_S - 8 * 86400))
LIVE_PRELOAD_START_S=$((NOW_S - 3600 - 3072 * 10))
HIST_VALUES=$((HOSTS * 10 * 6 * 60 * 24 * 7))  # a week of 10 s rows
log "backfill reference: a week of history ($HIST_VALUES values) into a fresh node, alone"
start_ingot backfill-alone
json=$(bench backfill-alone "tcp://127.0.0.1:$TCP_PORT" --points "$HIST_VALUES" --hosts "$HOSTS" \
  --start $((HIST_START_S * 1000000000)))
ALONE_RATE=$(jq -r '.values_per_s.mean' "$json")
stop_server

log "backfill: preload 3072 rows of live data, then history while live data flows"
start_ingot backfill-live
bench preload "tcp://127.0.0.1:$TCP_PORT" --points $((HOSTS * 10 * 3072)) --hosts "$HOSTS" \
  --start $((LIVE_PRELOAD_START_S * 1000000000)) >/dev/null
# Probe: one point of an existing series (probe_v, created by the first probe) per 0.2 s.
PROBE_OUT="$WORK/probe.txt"
(
  # Live rows are 10 s apart from NOW - 3600; probe points fall between them.
  t=$((NOW_S - 3600 + 5))
  while :; do
    v=$RANDOM
    t=$((t + 10))
    begin=$(date +%s%N)
    curl -s -o /dev/null -X POST "http://127.0.0.1:$HTTP_PORT/write?precision=s" \
      --data-binary "probe v=$v.5 $t" || true
    while :; do
      got=$(curl -s "http://127.0.0.1:$HTTP_PORT/api/v1/query?query=last_over_time(probe_v%5B1m%5D)&time=$t" |
        jq -r '.data.result[0].value[1] // empty' 2>/dev/null || true)
      [[ $got == "$v.5" ]] && break
      sleep 0.01
    done
    echo $((($(date +%s%N) - begin) / 1000000)) >>"$PROBE_OUT"
    sleep 0.2
  done
) &
PROBE_PID=$!
sleep 1  # the probe series exists before the history starts
LIVE_JSON="$WORK/live.json"
"$BENCH" ingest --target "tcp://127.0.0.1:$TCP_PORT" --interval 10s --hosts "$HOSTS" \
  --start $(((LIVE_PRELOAD_START_S + 3072 * 10) * 1000000000)) --rate 20000 --duration 600s \
  --points $((HOSTS * 10 * 300)) --json "$LIVE_JSON" --quiet >/dev/null 2>&1 &
LIVE_PID=$!
json=$(bench backfill-live "tcp://127.0.0.1:$TCP_PORT" --points "$HIST_VALUES" --hosts "$HOSTS" \
  --start $((HIST_START_S * 1000000000)))
BACKFILL_RATE=$(jq -r '.values_per_s.mean' "$json")
BACKFILL_COUNTED="$(jq -r '.verify.counted_values' "$json") / $(jq -r '.verify.expected_values' "$json")"
kill "$PROBE_PID" 2>/dev/null || true
wait "$PROBE_PID" 2>/dev/null || true
PROBE_PID=""
wait "$LIVE_PID" || true
LATE=$(metric ingot_points_late_total)
touch "$PROBE_OUT"
PROBES=$(wc -l <"$PROBE_OUT")
PROBE_MAX=$(sort -n "$PROBE_OUT" | tail -1)
PROBE_P50=$(sort -n "$PROBE_OUT" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
stop_server

echo
echo "### Backfill: a week of history ($HIST_VALUES values, $((HOSTS * 10)) series) over 1 TCP connection"
echo
echo "| run | values/s | counted / sent | late points |"
echo "|---|---|---|---|"
echo "| history alone (in order) | $(calc %.0f "$ALONE_RATE") | | |"
echo "| history while live data flows | $(calc %.0f "$BACKFILL_RATE") | $BACKFILL_COUNTED | $LATE |"
echo "| ratio | $(calc %.2f "$BACKFILL_RATE / $ALONE_RATE") | | |"
echo
echo "Probe during the backfill (HTTP write of an existing series, then query until it is returned): $PROBES probes, p50 ${PROBE_P50} ms, max ${PROBE_MAX} ms."

# 3. Overlap reads and bytes after the merge.
RANGE_Q="query=sum(rate(cpu_usage_user%5B5m%5D))&start=$START_S&end=$((START_S + SPAN_S))&step=60"
time_query() {  # best of 5, in ms
  local best=999999 i t
  for i in 1 2 3 4 5; do
    t=$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$HTTP_PORT/api/v1/query_range?$RANGE_Q")
    t=$(calc %.0f "$t * 1000")
    ((t < best)) && best=$t
  done
  echo "$best"
}
log "overlap reads: round-robin data over 4 connections, merging paused"
start_ingot overlap --set storage.late_compaction_points_per_s=0
bench overlap "tcp://127.0.0.1:$TCP_PORT" --connections 4 --round-robin --points "$VALUES" \
  --hosts "$HOSTS" --start $((START_S * 1000000000)) >/dev/null
LATE_SERIES=$(metric ingot_late_series)
BEFORE_MS=$(time_query)
ANSWER_BEFORE=$(curl -s "http://127.0.0.1:$HTTP_PORT/api/v1/query_range?$RANGE_Q" | jq -c '.data.result')
curl -s -X POST "http://127.0.0.1:$HTTP_PORT/internal/force_merge" >"$WORK/merge.json"
AFTER_MS=$(time_query)
ANSWER_AFTER=$(curl -s "http://127.0.0.1:$HTTP_PORT/api/v1/query_range?$RANGE_Q" | jq -c '.data.result')
MERGED_BYTES=$(metric ingot_chunk_bytes_on_disk)
stop_server
log "in-order reference: the same data over one connection"
start_ingot inorder
bench inorder "tcp://127.0.0.1:$TCP_PORT" --connections 1 --points "$VALUES" --hosts "$HOSTS" \
  --start $((START_S * 1000000000)) >/dev/null
curl -s -X POST "http://127.0.0.1:$HTTP_PORT/internal/force_merge" >/dev/null
INORDER_BYTES=$(metric ingot_chunk_bytes_on_disk)
stop_server
SAME="yes"
[[ $ANSWER_BEFORE == "$ANSWER_AFTER" ]] || SAME="NO"

echo
echo "### Overlap reads and bytes ($VALUES values dealt to 4 connections; $LATE_SERIES series with late data before the merge)"
echo
echo "| measure | with late chunks | after merge | ratio |"
echo "|---|---|---|---|"
echo "| range query (sum(rate(cpu_usage_user[5m])), step 60 s), best of 5, ms | $BEFORE_MS | $AFTER_MS | $(calc %.2f "$BEFORE_MS / ($AFTER_MS > 0 ? $AFTER_MS : 1)") |"
echo
echo "Same answer before and after the merge: $SAME. Merge: $(jq -c '.data' "$WORK/merge.json")."
echo
echo "| data | bytes/value |"
echo "|---|---|"
echo "| round-robin, after merge | $(calc %.4f "$MERGED_BYTES / $VALUES") |"
echo "| in order (1 connection) | $(calc %.4f "$INORDER_BYTES / $VALUES") |"
echo "| ratio | $(calc %.3f "$MERGED_BYTES / $INORDER_BYTES") |"
