#!/usr/bin/env bash
# Ingest through a one-node cluster against the same node alone (docs/scale-out.md): the same
# ingot-bench load (the TSBS-like cpu workload over HTTP /write, acknowledged batches) sent to
#   direct   a plain ingotd;
#   R1       ingotd as the only node of a cluster whose log is one nats-server (JetStream R1);
#   R3       the same node with its log on three nats-servers (JetStream R3).
# Every run starts on empty data directories. Prints a markdown table: values/s while sending
# (acknowledged: in storage for direct, in the log for the cluster), values/s until every value is
# queryable, and the CPU seconds of ingotd and of the nats-servers.
#
# Run it through `./dev compare-cluster [--points N] [--connections C] [--partitions P]`
# (defaults 4,000,000, 4 and 8: the node's partitions of the log), which installs
# nats-server and jq and builds ingotd and ingot-bench (Release) first.
set -euo pipefail

POINTS=4000000
CONNECTIONS=4
PARTITIONS=8
while (($# > 0)); do
  case "$1" in
    --points) POINTS=${2:?--points needs a number}; shift 2 ;;
    --connections) CONNECTIONS=${2:?--connections needs a number}; shift 2 ;;
    --partitions) PARTITIONS=${2:?--partitions needs a number}; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "compare_cluster.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INGOTD="$ROOT/build/node/ingotd"
BENCH="$ROOT/build/bench/ingot-bench"
NATS="$(command -v nats-server || echo /usr/sbin/nats-server)"
for tool in "$INGOTD" "$BENCH" "$NATS" "$(command -v jq || true)" "$(command -v curl || true)"; do
  if [[ -z $tool || ! -x $tool ]]; then
    echo "compare_cluster.sh: missing ${tool:-jq or curl}; run ./dev compare-cluster" >&2
    exit 2
  fi
done

source "$(dirname "${BASH_SOURCE[0]}")/compare_lib.sh"
make_work_dir compare-cluster

NATS_PIDS=()
cleanup_extra() {
  local pid
  for pid in "${NATS_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${NATS_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  NATS_PIDS=()
}

# start_nats N: N nats-servers with JetStream in one cluster (N > 1); sets NATS_URLS.
start_nats() {
  local n=$1 i ports=() cports=() routes
  for ((i = 0; i < n; i++)); do
    ports+=("$(free_port)")
    cports+=("$(free_port)")
  done
  NATS_URLS=""
  for ((i = 0; i < n; i++)); do
    local args=(-js -a 127.0.0.1 -p "${ports[i]}" -sd "$WORK/nats$n-$i" --server_name "s$i")
    if ((n > 1)); then
      routes=""
      local j
      for ((j = 0; j < n; j++)); do
        ((j == i)) || routes+="${routes:+,}nats://127.0.0.1:${cports[j]}"
      done
      args+=(--cluster_name bench --cluster "nats://127.0.0.1:${cports[i]}" --routes "$routes")
    fi
    "$NATS" "${args[@]}" >"$WORK/nats$n-$i.log" 2>&1 &
    NATS_PIDS+=($!)
    NATS_URLS+="${NATS_URLS:+,}nats://127.0.0.1:${ports[i]}"
  done
  for ((i = 0; i < 100; i++)); do
    local up=0 p
    for p in "${ports[@]}"; do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && up=$((up + 1)); done
    ((up == n)) && return 0
    sleep 0.1
  done
  echo "nats-server did not start" >&2
  return 1
}

nats_cpu() {
  local pid total=0
  for pid in "${NATS_PIDS[@]}"; do
    total=$(calc "%.2f" "$total + $(sed 's/^.*) //' "/proc/$pid/stat" | awk -v hz="$CLK_TCK" '{ printf "%.2f", ($12 + $13) / hz }')")
  done
  echo "$total"
}

declare -A RESULT

# run NAME [ingotd --set arguments...]
run() {
  local name=$1
  shift
  SERVER_NAME="ingotd ($name)"
  SERVER_LOG="$WORK/ingotd-$name.log"
  local tcp http json cpu_before nats_before
  tcp=$(free_port)
  http=$(free_port)
  "$INGOTD" --config "$ROOT/conf/ingot.toml" --data-dir "$WORK/data-$name" \
    --set "ingest.tcp_listen=127.0.0.1:$tcp" --set "query.http_listen=127.0.0.1:$http" "$@" \
    >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  wait_ready "http://127.0.0.1:$http/health" "$tcp"
  sleep 1  # a cluster node takes its partitions
  cpu_before=$(cpu_seconds)
  nats_before=$(nats_cpu)
  json="$WORK/$name.json"
  log "$name: $POINTS values over $CONNECTIONS HTTP connections"
  "$BENCH" ingest --target "http://127.0.0.1:$http/write" --connections "$CONNECTIONS" \
    --points "$POINTS" --start "$(( ($(date +%s) - 86400) * 1000000000 ))" \
    --verify "http://127.0.0.1:$http" --verify-timeout 600s --json "$json" --quiet >/dev/null
  RESULT[$name.send]=$(jq -r '.values_per_s.mean' "$json")
  RESULT[$name.queryable_s]=$(jq -r '.verify.queryable_after_s' "$json")
  RESULT[$name.send_s]=$(jq -r '.send_seconds' "$json")
  RESULT[$name.errors]=$(jq -r '.first_error' "$json")
  RESULT[$name.cpu]=$(calc "%.2f" "$(cpu_seconds) - $cpu_before")
  RESULT[$name.nats_cpu]=$(calc "%.2f" "$(nats_cpu) - $nats_before")
  RESULT[$name.hwm]=$(status_mb VmHWM)
  local bytes
  bytes=$(curl -s "http://127.0.0.1:$http/metrics" |
    awk '$1 == "ingot_cluster_published_bytes_total" { print $2 }')
  RESULT[$name.log_bytes]=${bytes:-0}
  stop_server
}

CLUSTER=(--set cluster.name=bench --set cluster.node_id=n1 --set cluster.replication=1
  --set "cluster.partitions=$PARTITIONS")
run direct
start_nats 1
run R1 "${CLUSTER[@]}" --set "cluster.nats_urls=$NATS_URLS" --set cluster.stream_replicas=1
cleanup_extra
start_nats 3
run R3 "${CLUSTER[@]}" --set "cluster.nats_urls=$NATS_URLS" --set cluster.stream_replicas=3
cleanup_extra

r() { echo "${RESULT[$1]}"; }
queryable_rate() { calc "%.0f" "$POINTS / $(r "$1.queryable_s")"; }
echo
echo "### $POINTS values of the cpu workload over $CONNECTIONS HTTP connections (ingot-bench ingest)"
echo
echo "| setup | values/s acknowledged | values/s until queryable | ingotd CPU s | nats-server CPU s | ingotd peak RSS MB | log bytes/value | vs direct (acknowledged / queryable) |"
echo "|---|---|---|---|---|---|---|---|"
for name in direct R1 R3; do
  echo "| $name | $(calc "%.0f" "$(r "$name.send")") | $(queryable_rate "$name") | $(r "$name.cpu") | $(r "$name.nats_cpu") | $(r "$name.hwm") | $(calc "%.2f" "$(r "$name.log_bytes") / $POINTS") | $(calc "%.2f" "$(r "$name.send") / $(r direct.send)") / $(calc "%.2f" "$(queryable_rate "$name") / $(queryable_rate direct)") |"
done
for name in direct R1 R3; do
  [[ -z $(r "$name.errors") ]] || echo "$name: first error: $(r "$name.errors")"
done
