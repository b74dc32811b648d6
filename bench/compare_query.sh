#!/usr/bin/env bash
# Dashboard query latency: Ingot against Prometheus and VictoriaMetrics on the same samples.
#
# `ingot-bench dashboard-data` writes one day of counters (http_requests_total{job,instance,code})
# and histogram buckets (http_request_duration_seconds_bucket{job,instance,le}) in three formats
# with the same samples: line protocol for Ingot's /write, OpenMetrics for `promtool tsdb
# create-blocks-from openmetrics`, Prometheus text for VictoriaMetrics' /api/v1/import/prometheus.
# Each server in turn is started on free loopback ports with its data under a temp dir, loaded,
# waited for until a count query returns every sample, then queried by one client
# (`ingot-bench query --workload dashboard`: five instant queries at the data's end and a
# one-day range query at 60 s steps), and stopped, so each has the machine to itself.
#
# Prints markdown tables: p50 (p90) latency per query and server, Ingot/peer ratios of the p50s,
# the servers' peak RSS (VmHWM) and CPU seconds; then each server's answer to every query against
# Prometheus' answer. A query a server refuses is reported as "error: <message>".
#
# Run it through `./dev compare-query [options]`, which installs the peers and jq and builds
# ingotd and ingot-bench (Release) first. BUILD_DIR (default ./build) picks the build to run.
# docs/benchmarks.md describes the method.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/compare_query.sh [--counters N] [--histograms H] [--interval D] [--iterations N]
                              [--max-seconds S] [--warmup N] [--keep]

  --counters N     http_requests_total series (default 1000: 5 jobs x 40 instances x 5 codes)
  --histograms H   histograms of 11 buckets each (default 50)
  --interval D     sample interval over the one day of data (default 30s)
  --iterations N   queries per workload and server (default 100) ...
  --max-seconds S  ... or fewer if a workload runs longer than this (default 20)
  --warmup N       unreported queries before each workload (default 3)
  --keep           keep the data directories, data files and logs (the path is printed)

Environment: BUILD_DIR (default ./build) holds node/ingotd and bench/ingot-bench.
EOF
}

COUNTERS=1000
HISTOGRAMS=50
INTERVAL=30s
ITERATIONS=100
MAX_SECONDS=20
WARMUP=3
KEEP=0
while (($# > 0)); do
  case "$1" in
    --counters) COUNTERS=${2:?--counters needs a number}; shift 2 ;;
    --histograms) HISTOGRAMS=${2:?--histograms needs a number}; shift 2 ;;
    --interval) INTERVAL=${2:?--interval needs a duration}; shift 2 ;;
    --iterations) ITERATIONS=${2:?--iterations needs a number}; shift 2 ;;
    --max-seconds) MAX_SECONDS=${2:?--max-seconds needs a number}; shift 2 ;;
    --warmup) WARMUP=${2:?--warmup needs a number}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "compare_query.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for value in "$COUNTERS" "$HISTOGRAMS" "$ITERATIONS" "$MAX_SECONDS" "$WARMUP"; do
  if ! [[ $value =~ ^[0-9]+$ ]]; then
    echo "compare_query.sh: '$value' is not a non-negative integer" >&2
    exit 2
  fi
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR="$PWD/$BUILD_DIR"
INGOTD="$BUILD_DIR/node/ingotd"
BENCH="$BUILD_DIR/bench/ingot-bench"
PROMETHEUS="$(command -v prometheus || true)"
PROMTOOL="$(command -v promtool || true)"
VM="$(command -v victoria-metrics || true)"
for tool in "$INGOTD" "$BENCH" "$PROMETHEUS" "$PROMTOOL" "$VM" "$(command -v jq || true)" \
  "$(command -v curl || true)"; do
  if [[ -z $tool || ! -x $tool ]]; then
    echo "compare_query.sh: missing ${tool:-prometheus, promtool, victoria-metrics, jq or curl};" \
      "run ./dev compare-query, which installs and builds what it needs" >&2
    exit 2
  fi
done

source "$(dirname "${BASH_SOURCE[0]}")/compare_lib.sh"

# Servers started by the packages (Debian starts and enables prometheus.service and
# victoria-metrics.service on install) are not ours to stop, and do not collide with the ports
# below; but they share the CPU with the measurement.
for name in prometheus victoria-metrics prometheus-node-exporter; do
  # -f: a process name is cut to 15 characters, so -x would miss victoria-metrics.
  if pids=$(pgrep -f "(^|/)$name( |\$)" | tr '\n' ' ') && [[ -n $pids ]]; then
    echo "compare_query.sh: warning: a $name not started by this script runs (pid $pids) and" \
      "takes CPU from the measurement; stop it first (e.g. systemctl disable --now $name)" >&2
  fi
done

make_work_dir compare-query

DATA_FLAGS=(--counters "$COUNTERS" --histograms "$HISTOGRAMS" --interval "$INTERVAL"
  --duration 24h --start 2024-01-01T00:00:00Z --seed 1)
WORKLOADS=(rate sum-rate hist-quantile topk ratio range-1d)
declare -A RESULT  # "<server>.<measure>" -> value

# generate FORMAT: writes DATA=$WORK/data.FORMAT (the same samples whatever the format); the first
# call sets SAMPLES, FIRST_NS and LAST_NS, later ones must agree.
SAMPLES=""
generate() {
  local format=$1 file="$WORK/data.$1"
  "$BENCH" dashboard-data --format "$format" --out "$file" --json "$file.json" "${DATA_FLAGS[@]}" \
    2>/dev/null
  local samples first last
  samples=$(jq -r .samples "$file.json")
  first=$(jq -r .first_ts_ns "$file.json")
  last=$(jq -r .last_ts_ns "$file.json")
  if [[ -z $SAMPLES ]]; then
    SAMPLES=$samples FIRST_NS=$first LAST_NS=$last
  elif [[ $samples != "$SAMPLES" || $first != "$FIRST_NS" || $last != "$LAST_NS" ]]; then
    echo "dashboard-data --format $format: $samples samples $first..$last, expected" \
      "$SAMPLES samples $FIRST_NS..$LAST_NS" >&2
    return 1
  fi
  DATA=$file
}

# wait_count HTTP_PORT: until the server counts every sample, at most 300 s.
wait_count() {
  local port=$1 i answer count="?"
  local range_s=$(((LAST_NS - FIRST_NS) / 1000000000 + 2))
  local query="sum(count_over_time({__name__=~\"http_.+\"}[${range_s}s]))"
  local time_s
  time_s=$(calc "%.3f" "($LAST_NS + 1000000) / 1e9")
  for ((i = 0; i < 1200; i++)); do
    if ! server_alive; then
      echo "$SERVER_NAME exited while loading" >&2
      return 1
    fi
    answer=$(curl -s --max-time 60 --get "http://127.0.0.1:$port/api/v1/query" \
      --data-urlencode "query=$query" --data-urlencode "time=$time_s" \
      --data-urlencode nocache=1) || answer=""
    count=$(jq -r '.data.result[0].value[1] // "0"' <<<"$answer" 2>/dev/null) || count="?"
    [[ $count == "$SAMPLES" ]] && return 0
    sleep 0.25
  done
  echo "$SERVER_NAME counts $count of $SAMPLES samples after 300 s; last answer: ${answer:0:300}" >&2
  return 1
}

# measure NAME HTTP_PORT: the loaded server's peak RSS so far, then the workloads, each workload's
# answer once, and the peak RSS and CPU seconds over those.
measure() {
  local name=$1 port=$2 rc=0 workload request
  RESULT[$name.hwm_load]=$(status_mb VmHWM)
  # Writing 5 to clear_refs resets VmHWM to the current RSS, so the next reading is the peak over
  # the queries alone.
  if echo 5 2>/dev/null >"/proc/$SERVER_PID/clear_refs"; then
    RESULT[$name.hwm_reset]=1
  else
    RESULT[$name.hwm_reset]=0
  fi
  local cpu_before
  cpu_before=$(cpu_seconds)
  log "$name: ${WORKLOADS[*]} ($ITERATIONS queries or ${MAX_SECONDS} s each, 1 client)"
  "$BENCH" query --target "http://127.0.0.1:$port" --workload dashboard --concurrency 1 \
    --iterations "$ITERATIONS" --duration "${MAX_SECONDS}s" --warmup "$WARMUP" \
    --start "$FIRST_NS" --end "$LAST_NS" --timeout 120s --json "$WORK/$name-query.json" \
    --quiet >"$WORK/$name-query.txt" 2>&1 || rc=$?
  # 1: some query failed, which the table reports; anything else is a broken run.
  if ((rc > 1)) || [[ ! -s $WORK/$name-query.json ]]; then
    echo "ingot-bench query against $name failed ($rc):" >&2
    cat "$WORK/$name-query.txt" >&2
    return 1
  fi
  sed "s/^/    [$name] /" "$WORK/$name-query.txt" >&2
  for workload in "${WORKLOADS[@]}"; do
    request=$(jq -r --arg w "$workload" '.workloads[] | select(.name == $w) | .request' \
      "$WORK/$name-query.json")
    curl -s --max-time 120 -o "$WORK/$name-$workload.answer" "http://127.0.0.1:$port$request" ||
      true
  done
  RESULT[$name.cpu]=$(calc "%.2f" "$(cpu_seconds) - $cpu_before")
  RESULT[$name.hwm_query]=$(status_mb VmHWM)
}

log "work dir $WORK"

# Ingot: line protocol over HTTP /write.
SERVER_NAME=ingotd
SERVER_LOG="$WORK/ingotd.log"
INGOT_TCP=$(free_port)
INGOT_HTTP=$(free_port)
log "starting ingotd (tcp $INGOT_TCP, http $INGOT_HTTP)"
"$INGOTD" --config "$ROOT/conf/ingot.toml" --data-dir "$WORK/ingot-data" \
  --set "ingest.tcp_listen=127.0.0.1:$INGOT_TCP" --set "query.http_listen=127.0.0.1:$INGOT_HTTP" \
  >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$INGOT_HTTP/health" "$INGOT_TCP"
generate lp
log "data: $SAMPLES samples, $(date -u -d "@$((FIRST_NS / 1000000000))" +%FT%TZ) .. $(date -u -d "@$((LAST_NS / 1000000000))" +%FT%TZ)"
log "ingot: loading $(du -h "$DATA" | cut -f1) of line protocol over HTTP /write"
start_s=$(date +%s.%N)
if ! "$BENCH" ingest --target "http://127.0.0.1:$INGOT_HTTP/write" --file "$DATA" \
  --batch-lines 5000 --timeout 120s --quiet >"$WORK/ingot-load.txt" 2>&1; then
  echo "loading ingotd failed:" >&2
  cat "$WORK/ingot-load.txt" >&2
  exit 1
fi
wait_count "$INGOT_HTTP"
RESULT[ingot.load]=$(calc "%.1f" "$(date +%s.%N) - $start_s")
((KEEP)) || rm -f "$DATA"
measure ingot "$INGOT_HTTP"
stop_server

# Prometheus: OpenMetrics into blocks with promtool (offline), then the server on those blocks.
SERVER_NAME=prometheus
SERVER_LOG="$WORK/prometheus.log"
generate openmetrics
log "prometheus: promtool tsdb create-blocks-from openmetrics ($(du -h "$DATA" | cut -f1))"
start_s=$(date +%s.%N)
# 24 h blocks at most: the day is written as the few large blocks a compacted server would have,
# so no compaction starts while the queries run.
if ! "$PROMTOOL" tsdb create-blocks-from openmetrics --max-block-duration=24h "$DATA" \
  "$WORK/prom-data" >"$WORK/promtool.log" 2>&1; then
  echo "promtool failed:" >&2
  cat "$WORK/promtool.log" >&2
  exit 1
fi
((KEEP)) || rm -f "$DATA"
# No scrape configs: the server only answers queries.
printf 'global:\n  scrape_interval: 15s\n' >"$WORK/prometheus.yml"
PROM_HTTP=$(free_port)
log "starting prometheus $("$PROMETHEUS" --version 2>&1 | awk 'NR == 1 { print $3 }') (http $PROM_HTTP)"
"$PROMETHEUS" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom-data" \
  --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$PROM_HTTP" \
  >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$PROM_HTTP/-/ready" "$PROM_HTTP"
wait_count "$PROM_HTTP"
RESULT[prom.load]=$(calc "%.1f" "$(date +%s.%N) - $start_s")
measure prom "$PROM_HTTP"
stop_server

# VictoriaMetrics: Prometheus text with ms timestamps.
SERVER_NAME=victoria-metrics
SERVER_LOG="$WORK/victoria-metrics.log"
VM_HTTP=$(free_port)
# The Debian build's -version prints nothing; the package knows its version.
log "starting victoria-metrics $(dpkg-query -W -f='${Version}' victoria-metrics 2>/dev/null || true)" \
  "(http $VM_HTTP)"
# -retentionPeriod 100y: the data is from January 2024, outside the default month.
"$VM" -storageDataPath "$WORK/vm-data" -retentionPeriod 100y \
  -httpListenAddr "127.0.0.1:$VM_HTTP" >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$VM_HTTP/health" "$VM_HTTP"
generate prometheus
log "vm: loading $(du -h "$DATA" | cut -f1) over /api/v1/import/prometheus"
start_s=$(date +%s.%N)
status=$(curl -s -o "$WORK/vm-import.answer" -w '%{http_code}' -H 'Expect:' \
  --data-binary "@$DATA" "http://127.0.0.1:$VM_HTTP/api/v1/import/prometheus") || status="curl failed"
if [[ $status != 204 && $status != 200 ]]; then
  echo "import into victoria-metrics answered $status: $(head -c 300 "$WORK/vm-import.answer")" >&2
  exit 1
fi
wait_count "$VM_HTTP"
RESULT[vm.load]=$(calc "%.1f" "$(date +%s.%N) - $start_s")
((KEEP)) || rm -f "$DATA"
measure vm "$VM_HTTP"
stop_server
SERVER_LOG=""

# Tables

# cell SERVER WORKLOAD: "p50 (p90)" in ms, or "error: <message>" when no query succeeded (the
# message of a Prometheus-style error answer, else the error as ingot-bench reports it).
cell() {
  local line p50 p90 errors
  line=$(jq -r --arg w "$2" '
    .workloads[] | select(.name == $w) |
    if .queries > 0 then
      "ok \(.latency_us.p50) \(.latency_us.p90) \([.errors[]] | add // 0)"
    else
      "error " + (((.first_error | capture("\"error\"\\s*:\\s*\"(?<m>[^\"]*)\"").m) //
                   .first_error) | gsub("[|\n\r]"; " ") | .[0:160])
    end' "$WORK/$1-query.json")
  case "$line" in
    ok\ *)
      read -r _ p50 p90 errors <<<"$line"
      printf '%.2f (%.2f)' "$(calc "%.3f" "$p50 / 1000")" "$(calc "%.3f" "$p90 / 1000")"
      if ((errors > 0)); then printf ' (%s errors)' "$errors"; fi
      echo
      ;;
    error\ *) echo "error: ${line#error }" ;;
    *) echo "no result" ;;
  esac
}
p50_us() {
  jq -r --arg w "$2" '.workloads[] | select(.name == $w) |
    if .queries > 0 then .latency_us.p50 else "" end' "$WORK/$1-query.json"
}
ratio() {
  if [[ -n $1 && -n $2 && $2 != 0 ]]; then calc "%.2f" "$1 / $2"; else echo "–"; fi
}

# answer SERVER WORKLOAD: the size of the answer and, but for Prometheus, the largest relative
# difference from Prometheus' answer over the (series, timestamp) points both have.
answer() {
  local file="$WORK/$1-$2.answer" ref="$WORK/prom-$2.answer"
  [[ -s $file ]] || { echo "no answer"; return; }
  jq -r -n --slurpfile a "$file" --slurpfile r "$ref" --arg self "$([[ $1 == prom ]] && echo 1)" '
    def key($m): $m | to_entries | sort_by(.key) | map("\(.key)=\(.value)") | join(",");
    def num: try tonumber catch null;
    def points:
      if .status != "success" then null
      elif .data.resultType == "matrix" then
        [.data.result[] | key(.metric) as $k | .values[] | {key: "\($k)@\(.[0])", value: (.[1] | num)}]
        | from_entries
      elif .data.resultType == "vector" then
        [.data.result[] | {key: key(.metric), value: (.value[1] | num)}] | from_entries
      elif .data.resultType == "scalar" then {"": (.data.result[1] | num)}
      else {} end;
    def abs: if . < 0 then -. else . end;
    ($a[0] | points) as $p | (($r[0] // {}) | points) as $q |
    if $p == null then "error"
    else
      ($a[0].data.result | if type == "array" then length else 1 end) as $series |
      ($p | length) as $n |
      "\($series) series" + (if $n != $series then ", \($n) points" else "" end) +
      if $self == "1" or $q == null then ""
      else
        [$p | keys[] | select($q[.] != null and $p[.] != null) |
          (($p[.] - $q[.]) | abs) / ([($q[.] | abs), 1e-300] | max)] as $diffs |
        ([$q | keys[] | select($p[.] == null)] | length) as $missing |
        (if ($diffs | length) == 0 then ", nothing in common" else
          ", max diff \($diffs | max * 10000 | round / 100)%" +
          ([$diffs[] | select(. > 0.01)] | length |
            if . > 0 then " (\(.) of \($diffs | length) > 1%)" else "" end) end) +
        (if $missing > 0 then ", \($missing) missing" else "" end)
      end
    end' 2>/dev/null || echo "unreadable answer"
}

DATA_TEXT="$COUNTERS counters + $HISTOGRAMS histograms x 11 buckets, 1 day at $INTERVAL: $SAMPLES samples"
echo
echo "### Dashboard queries, 1 client: p50 (p90) latency in ms ($DATA_TEXT)"
echo
echo "| query | Ingot | Prometheus | VictoriaMetrics | Ingot / Prometheus (p50) | Ingot / VM (p50) |"
echo "|---|---|---|---|---|---|"
for workload in "${WORKLOADS[@]}"; do
  expr=$(jq -r --arg w "$workload" '.workloads[] | select(.name == $w) | .query' \
    "$WORK/ingot-query.json")
  [[ $workload == range-1d ]] && expr="$expr, 1 d at 60 s"
  ingot_p50=$(p50_us ingot "$workload")
  echo "| $workload: \`${expr//|/\\|}\` | $(cell ingot "$workload") | $(cell prom "$workload") |" \
    "$(cell vm "$workload") | $(ratio "$ingot_p50" "$(p50_us prom "$workload")") |" \
    "$(ratio "$ingot_p50" "$(p50_us vm "$workload")") |"
done
r() { echo "${RESULT[$1]}"; }
hwm_query() {
  if [[ $(r "$1.hwm_reset") == 1 ]]; then r "$1.hwm_query"; else echo "n/a"; fi
}
hwm_all() { calc "%.1f" "($(r "$1.hwm_load") > $(r "$1.hwm_query")) ? $(r "$1.hwm_load") : $(r "$1.hwm_query")"; }
echo "| peak RSS MB (VmHWM), load + queries | $(hwm_all ingot) | $(hwm_all prom) | $(hwm_all vm) |" \
  "$(ratio "$(hwm_all ingot)" "$(hwm_all prom)") | $(ratio "$(hwm_all ingot)" "$(hwm_all vm)") |"
if [[ $(r ingot.hwm_reset)$(r prom.hwm_reset)$(r vm.hwm_reset) == 111 ]]; then
  echo "| peak RSS MB (VmHWM), queries only | $(hwm_query ingot) | $(hwm_query prom) |" \
    "$(hwm_query vm) | $(ratio "$(hwm_query ingot)" "$(hwm_query prom)") |" \
    "$(ratio "$(hwm_query ingot)" "$(hwm_query vm)") |"
fi
echo "| server CPU s over the queries | $(r ingot.cpu) | $(r prom.cpu) | $(r vm.cpu) |" \
  "$(ratio "$(r ingot.cpu)" "$(r prom.cpu)") | $(ratio "$(r ingot.cpu)" "$(r vm.cpu)") |"
echo "| load until counted, s | $(r ingot.load) | $(r prom.load) (promtool + start) | $(r vm.load) | | |"

echo
echo "### Answers: result size and largest relative difference from Prometheus' answer"
echo
echo "| query | Ingot | Prometheus | VictoriaMetrics |"
echo "|---|---|---|---|"
for workload in "${WORKLOADS[@]}"; do
  echo "| $workload | $(answer ingot "$workload") | $(answer prom "$workload") | $(answer vm "$workload") |"
done
