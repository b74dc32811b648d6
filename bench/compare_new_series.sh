#!/usr/bin/env bash
# Ingot against VictoriaMetrics on new series: the same ingot-bench workload, every line a series
# never sent before (--fields 1 --new-series-ratio 1), over one TCP connection to a fresh ingotd and
# then to a fresh victoria-metrics, each on an empty data directory and alone on the machine.
# Prints markdown tables, one row per server and a ratio row: time until every point is queryable,
# series/s, the server's CPU seconds and its peak RSS; then the RSS around two catalog queries
# (/api/v1/series and /api/v1/labels), which should not make it grow.
#
# Run it through `./dev compare-series [options]`, which installs victoria-metrics and jq and builds
# ingotd and ingot-bench (Release) first. docs/benchmarks.md describes the method.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/compare_new_series.sh [--series N] [--points-per-series K] [--tags T] [--keep]

  --series N             new series to create, one point each (default 200000)
  --tags T               tags per line after hostname (0..9, default 1: cpu,hostname=..,region=..)
  --points-per-series K  then send K-1 further points to each of them, one ingot-bench run per
                         point, and report that phase too (default 1: no further points)
  --keep                 keep the data directories and logs (the path is printed)
EOF
}

SERIES=200000
POINTS_PER_SERIES=1
KEEP=0
TAGS=1
while (($# > 0)); do
  case "$1" in
    --series) SERIES=${2:?--series needs a number}; shift 2 ;;
    --points-per-series) POINTS_PER_SERIES=${2:?--points-per-series needs a number}; shift 2 ;;
    --tags) TAGS=${2:?--tags needs a number}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "compare_new_series.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
if ! [[ $SERIES =~ ^[1-9][0-9]*$ && $POINTS_PER_SERIES =~ ^[1-9][0-9]*$ ]]; then
  echo "compare_new_series.sh: --series and --points-per-series must be positive integers" >&2
  exit 2
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INGOTD="$ROOT/build/node/ingotd"
BENCH="$ROOT/build/bench/ingot-bench"
VM="$(command -v victoria-metrics || true)"
for tool in "$INGOTD" "$BENCH" "$VM" "$(command -v jq || true)" "$(command -v curl || true)"; do
  if [[ -z $tool || ! -x $tool ]]; then
    echo "compare_new_series.sh: missing ${tool:-victoria-metrics, jq or curl};" \
      "run ./dev compare-series, which installs and builds what it needs" >&2
    exit 2
  fi
done

source "$(dirname "${BASH_SOURCE[0]}")/compare_lib.sh"

make_work_dir compare-series


# Every run gets the same bytes: line i goes to the new host n<i>, row i/1000 of one-second rows.
# One pass of N series spans N/1000 s; pass j (seed 1+j) starts j strides later, so every point of
# a series has its own timestamp. The 10 s between passes keep a pass's count query (whose range
# reaches up to 2 s before its first point) from counting the previous pass. The data ends an hour
# before now: VictoriaMetrics accepts points within its retention and not far in the future, and
# makes the newest 30 s visible late (-search.latencyOffset).
HOSTS=1000
ROWS=$(((SERIES + HOSTS - 1) / HOSTS))
STRIDE_S=$((ROWS + 10))
NOW_S=$(date +%s)
START_S=$((NOW_S - 3600 - POINTS_PER_SERIES * STRIDE_S))
END_S=$((START_S + POINTS_PER_SERIES * STRIDE_S))

# run_pass NAME TCP_PORT HTTP_PORT J: the J-th point of every series; prints the JSON report's path.
run_pass() {
  local name=$1 tcp_port=$2 http_port=$3 j=$4
  local json="$WORK/$name-pass$j.json" text="$WORK/$name-pass$j.txt" bench_pid
  "$BENCH" ingest --target "tcp://127.0.0.1:$tcp_port" --connections 1 --points "$SERIES" \
    --fields 1 --tags "$TAGS" --new-series-ratio 1 --hosts "$HOSTS" --interval 1s --seed $((1 + j)) \
    --start $(((START_S + j * STRIDE_S) * 1000000000)) --timeout 120s \
    --verify "http://127.0.0.1:$http_port" --verify-timeout 900s --json "$json" --quiet \
    >"$text" 2>&1 &
  bench_pid=$!
  # A server that dies would leave ingot-bench retrying for its timeouts (minutes): stop it at once.
  while kill -0 "$bench_pid" 2>/dev/null; do
    if ! server_alive; then
      kill -TERM "$bench_pid" 2>/dev/null || true
      wait "$bench_pid" 2>/dev/null || true
      echo "$SERVER_NAME exited while ingot-bench ran (pass $j)" >&2
      cat "$text" >&2
      return 1
    fi
    sleep 0.5
  done
  if ! wait "$bench_pid"; then
    echo "ingot-bench against $name failed (pass $j):" >&2
    cat "$text" >&2
    return 1
  fi
  sed "s/^/    [$name pass $((j + 1))] /" "$text" >&2
  echo "$json"
}

# catalog_query NAME URL: one request; prints "<http status> <bytes> <seconds>".
catalog_query() {
  curl -s -o "$WORK/$1.answer" --max-time 300 -w '%{http_code} %{size_download} %{time_total}' "$2"
}

declare -A RESULT  # "<server>.<measure>" -> value

# measure NAME HTTP_PORT TCP_PORT: runs the passes and the catalog queries against the running
# server and fills RESULT[NAME.*].
measure() {
  local name=$1 http_port=$2 tcp_port=$3
  local cpu_before json seconds j answer
  cpu_before=$(cpu_seconds)
  log "$name: $SERIES new series, one point each"
  json=$(run_pass "$name" "$tcp_port" "$http_port" 0)
  RESULT[$name.seconds]=$(calc "%.3f" "$(jq -r '.verify.queryable_after_s' "$json")")
  RESULT[$name.series_per_s]=$(jq -r '.new_series_per_s.queryable' "$json")
  RESULT[$name.send_seconds]=$(calc "%.3f" "$(jq -r '.send_seconds' "$json")")
  RESULT[$name.cpu]=$(calc "%.2f" "$(cpu_seconds) - $cpu_before")
  RESULT[$name.hwm]=$(status_mb VmHWM)
  RESULT[$name.rss]=$(status_mb VmRSS)
  if ((POINTS_PER_SERIES > 1)); then
    log "$name: $((POINTS_PER_SERIES - 1)) further points for each of the $SERIES series"
    cpu_before=$(cpu_seconds)
    seconds=0
    for ((j = 1; j < POINTS_PER_SERIES; j++)); do
      json=$(run_pass "$name" "$tcp_port" "$http_port" "$j")
      seconds=$(calc "%.3f" "$seconds + $(jq -r '.verify.queryable_after_s' "$json")")
    done
    RESULT[$name.more_seconds]=$seconds
    RESULT[$name.more_values_per_s]=$(calc "%.0f" "$SERIES * ($POINTS_PER_SERIES - 1) / $seconds")
    RESULT[$name.more_cpu]=$(calc "%.2f" "$(cpu_seconds) - $cpu_before")
    RESULT[$name.more_hwm]=$(status_mb VmHWM)
    RESULT[$name.more_rss]=$(status_mb VmRSS)
  fi
  log "$name: catalog queries"
  local base="http://127.0.0.1:$http_port/api/v1"
  RESULT[$name.catalog_rss_before]=$(status_mb VmRSS)
  answer=$(catalog_query "$name-series" \
    "$base/series?match%5B%5D=cpu_usage_user&start=$START_S&end=$((END_S + 60))")
  RESULT[$name.series_answer]=$answer
  RESULT[$name.series_count]=$(jq '.data | length' "$WORK/$name-series.answer" 2>/dev/null || echo "?")
  RESULT[$name.catalog_rss_series]=$(status_mb VmRSS)
  answer=$(catalog_query "$name-labels" "$base/labels?start=$START_S&end=$((END_S + 60))")
  RESULT[$name.labels_answer]=$answer
  RESULT[$name.catalog_rss_labels]=$(status_mb VmRSS)
  RESULT[$name.catalog_hwm]=$(status_mb VmHWM)
  if [[ ${answer%% *} != 200 || ${RESULT[$name.series_answer]%% *} != 200 ]]; then
    echo "$name: a catalog query failed (series: ${RESULT[$name.series_answer]}," \
      "labels: $answer); answers in $WORK/$name-*.answer" >&2
    return 1
  fi
}

# The query limits are raised to the series count so that the count query of --verify and the
# catalog queries may select every series (Ingot's default query.max_series is 100,000,
# VictoriaMetrics' -search.maxUniqueTimeseries 300,000 and -search.maxSeries 30,000).
LIMIT=$((SERIES + 1000))

log "workload: $SERIES series x $POINTS_PER_SERIES point(s), timestamps $(date -u -d "@$START_S" +%FT%TZ) .. $(date -u -d "@$END_S" +%FT%TZ), work dir $WORK"

# Ingot
SERVER_NAME=ingotd
SERVER_LOG="$WORK/ingotd.log"
INGOT_TCP=$(free_port)
INGOT_HTTP=$(free_port)
log "starting ingotd (tcp $INGOT_TCP, http $INGOT_HTTP)"
"$INGOTD" --config "$ROOT/conf/ingot.toml" --data-dir "$WORK/ingot-data" \
  --set "ingest.tcp_listen=127.0.0.1:$INGOT_TCP" --set "query.http_listen=127.0.0.1:$INGOT_HTTP" \
  --set "query.max_series=$LIMIT" >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$INGOT_HTTP/health" "$INGOT_TCP"
measure ingot "$INGOT_HTTP" "$INGOT_TCP"
stop_server

# VictoriaMetrics
SERVER_NAME=victoria-metrics
SERVER_LOG="$WORK/victoria-metrics.log"
VM_TCP=$(free_port)
VM_HTTP=$(free_port)
# The Debian build's -version prints nothing; the package knows its version.
log "starting victoria-metrics $(dpkg-query -W -f='${Version}' victoria-metrics 2>/dev/null || true)" \
  "(tcp $VM_TCP, http $VM_HTTP)"
"$VM" -storageDataPath "$WORK/vm-data" -retentionPeriod 100y \
  -httpListenAddr "127.0.0.1:$VM_HTTP" -influxListenAddr "127.0.0.1:$VM_TCP" \
  -search.maxUniqueTimeseries "$LIMIT" -search.maxSeries "$LIMIT" >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$VM_HTTP/health" "$VM_TCP"
measure vm "$VM_HTTP" "$VM_TCP"
stop_server
SERVER_LOG=""

# Tables
ratio() { calc "%.2f" "$1 / $2"; }
r() { echo "${RESULT[$1]}"; }

echo
echo "### $SERIES new series, one point each (1 TCP connection, --fields 1 --tags $TAGS --new-series-ratio 1)"
echo
echo "| server | seconds until queryable (sent in) | series/s | server CPU s | peak RSS MB |"
echo "|---|---|---|---|---|"
echo "| Ingot | $(r ingot.seconds) ($(r ingot.send_seconds)) | $(calc "%.0f" "$(r ingot.series_per_s)") | $(r ingot.cpu) | $(r ingot.hwm) |"
echo "| VictoriaMetrics | $(r vm.seconds) ($(r vm.send_seconds)) | $(calc "%.0f" "$(r vm.series_per_s)") | $(r vm.cpu) | $(r vm.hwm) |"
echo "| Ingot / VictoriaMetrics | $(ratio "$(r ingot.seconds)" "$(r vm.seconds)") | $(ratio "$(r ingot.series_per_s)" "$(r vm.series_per_s)") | $(ratio "$(r ingot.cpu)" "$(r vm.cpu)") | $(ratio "$(r ingot.hwm)" "$(r vm.hwm)") |"

if ((POINTS_PER_SERIES > 1)); then
  echo
  echo "### then $((POINTS_PER_SERIES - 1)) further point(s) per series ($POINTS_PER_SERIES points each, one ingot-bench run per point)"
  echo
  echo "| server | seconds until queryable | values/s | server CPU s | peak RSS MB | RSS MB |"
  echo "|---|---|---|---|---|---|"
  echo "| Ingot | $(r ingot.more_seconds) | $(r ingot.more_values_per_s) | $(r ingot.more_cpu) | $(r ingot.more_hwm) | $(r ingot.more_rss) |"
  echo "| VictoriaMetrics | $(r vm.more_seconds) | $(r vm.more_values_per_s) | $(r vm.more_cpu) | $(r vm.more_hwm) | $(r vm.more_rss) |"
  echo "| Ingot / VictoriaMetrics | $(ratio "$(r ingot.more_seconds)" "$(r vm.more_seconds)") | $(ratio "$(r ingot.more_values_per_s)" "$(r vm.more_values_per_s)") | $(ratio "$(r ingot.more_cpu)" "$(r vm.more_cpu)") | $(ratio "$(r ingot.more_hwm)" "$(r vm.more_hwm)") | $(ratio "$(r ingot.more_rss)" "$(r vm.more_rss)") |"
fi

echo
echo "### catalog queries after ingest: RSS MB before, after /api/v1/series?match[]=cpu_usage_user, after /api/v1/labels"
echo
echo "| server | RSS before | after series | after labels | peak RSS | series answer: series, MB, s | labels answer: kB, s |"
echo "|---|---|---|---|---|---|---|"
for name in ingot vm; do
  label=Ingot
  [[ $name == vm ]] && label=VictoriaMetrics
  read -r _ series_bytes series_s <<<"$(r "$name.series_answer")"
  read -r _ labels_bytes labels_s <<<"$(r "$name.labels_answer")"
  echo "| $label | $(r "$name.catalog_rss_before") | $(r "$name.catalog_rss_series") | $(r "$name.catalog_rss_labels") | $(r "$name.catalog_hwm") | $(r "$name.series_count"), $(calc "%.1f" "$series_bytes / 1e6"), $series_s | $(calc "%.1f" "$labels_bytes / 1e3"), $labels_s |"
done
