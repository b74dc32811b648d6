#!/usr/bin/env bash
# Ingot against VictoriaMetrics on Prometheus remote write: the same ingot-bench workload (the cpu
# workload as snappy protobuf WriteRequests, encoded before the clock starts), over the same
# connections, to a fresh ingotd and then to a fresh victoria-metrics, each on an empty data
# directory and alone on the machine. Prints a markdown table, one row per server and a ratio row:
# samples/s while sending (every request answered 2xx), seconds until every sample is queryable,
# the server's CPU seconds and its peak RSS. With --profile S, ingotd (built with the profiler)
# is CPU-profiled for S seconds during its run and the profile's top functions are printed.
#
# Run it through `./dev compare-remote-write [options]`, which installs victoria-metrics and jq and
# builds ingotd and ingot-bench (Release) first. docs/benchmarks.md describes the method.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/compare_remote_write.sh [--points N] [--hosts H] [--connections C]
                                     [--series-per-request S] [--samples-per-series M]
                                     [--profile SECONDS] [--keep]

  --points N               samples to send in total (default 20000000)
  --hosts H                hosts of the cpu workload, 10 series each (default 1000)
  --connections C          parallel HTTP connections (default 4)
  --series-per-request S   series in one WriteRequest (default 500)
  --samples-per-series M   consecutive samples of each series in one request (default 1: a
                           Prometheus server's batches of freshly scraped samples)
  --profile SECONDS        CPU-profile ingotd for this long while it ingests (needs a build
                           with the profiler, the default) and print the top of the profile
  --keep                   keep the data directories and logs (the path is printed)
EOF
}

POINTS=20000000
HOSTS=1000
CONNECTIONS=4
SERIES_PER_REQUEST=500
SAMPLES_PER_SERIES=1
PROFILE_S=0
KEEP=0
while (($# > 0)); do
  case "$1" in
    --points) POINTS=${2:?--points needs a number}; shift 2 ;;
    --hosts) HOSTS=${2:?--hosts needs a number}; shift 2 ;;
    --connections) CONNECTIONS=${2:?--connections needs a number}; shift 2 ;;
    --series-per-request) SERIES_PER_REQUEST=${2:?--series-per-request needs a number}; shift 2 ;;
    --samples-per-series) SAMPLES_PER_SERIES=${2:?--samples-per-series needs a number}; shift 2 ;;
    --profile) PROFILE_S=${2:?--profile needs seconds}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "compare_remote_write.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for n in "$POINTS" "$HOSTS" "$CONNECTIONS" "$SERIES_PER_REQUEST" "$SAMPLES_PER_SERIES"; do
  if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
    echo "compare_remote_write.sh: counts must be positive integers" >&2
    exit 2
  fi
done
[[ $PROFILE_S =~ ^[0-9]+$ ]] || { echo "compare_remote_write.sh: --profile needs whole seconds" >&2; exit 2; }

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-build}"
[[ $BUILD_DIR == /* ]] || BUILD_DIR="$ROOT/$BUILD_DIR"
INGOTD="$BUILD_DIR/node/ingotd"
BENCH="$BUILD_DIR/bench/ingot-bench"
VM="$(command -v victoria-metrics || true)"
for tool in "$INGOTD" "$BENCH" "$VM" "$(command -v jq || true)" "$(command -v curl || true)"; do
  if [[ -z $tool || ! -x $tool ]]; then
    echo "compare_remote_write.sh: missing ${tool:-victoria-metrics, jq or curl};" \
      "run ./dev compare-remote-write, which installs and builds what it needs" >&2
    exit 2
  fi
done

source "$(dirname "${BASH_SOURCE[0]}")/compare_lib.sh"

make_work_dir compare-remote-write

# Rows of one sample per series every 10 s, ending an hour before now: VictoriaMetrics accepts
# samples within its retention and not far in the future, and makes the newest 30 s visible late
# (-search.latencyOffset).
FIELDS=10
INTERVAL_S=10
ROWS=$(((POINTS / FIELDS + HOSTS - 1) / HOSTS))
NOW_S=$(date +%s)
START_S=$((NOW_S - 3600 - ROWS * INTERVAL_S))
SERIES=$((HOSTS * FIELDS))
LIMIT=$((SERIES + 1000))

declare -A RESULT  # "<server>.<measure>" -> value

# measure NAME HTTP_PORT: one ingot-bench run against the running server; fills RESULT[NAME.*].
measure() {
  local name=$1 http_port=$2 cpu_before json="$WORK/$1.json" text="$WORK/$1.txt" bench_pid
  local profile_pid=""
  cpu_before=$(cpu_seconds)
  log "$name: $POINTS samples of $SERIES series, $CONNECTIONS connections," \
    "$SERIES_PER_REQUEST series x $SAMPLES_PER_SERIES samples per request"
  "$BENCH" ingest --format prometheus-remote-write \
    --target "http://127.0.0.1:$http_port/api/v1/write" --connections "$CONNECTIONS" \
    --points "$POINTS" --hosts "$HOSTS" --fields "$FIELDS" --interval "${INTERVAL_S}s" \
    --rw-series "$SERIES_PER_REQUEST" --rw-samples "$SAMPLES_PER_SERIES" \
    --start $((START_S * 1000000000)) --timeout 120s \
    --verify "http://127.0.0.1:$http_port" --verify-timeout 900s --json "$json" --quiet \
    >"$text" 2>&1 &
  bench_pid=$!
  if [[ $name == ingot ]] && ((PROFILE_S > 0)); then
    # The requests are encoded before sending starts: profile once the server has work.
    (
      for ((i = 0; i < 600; i++)); do
        [[ $(curl -s "http://127.0.0.1:$http_port/metrics" |
          awk '$1 == "ingot_remote_write_requests_total" { print $2 }') > 0 ]] && break
        sleep 0.1
      done
      # The answer is the profile itself (or a JSON error).
      curl -s -o "$WORK/ingotd.prof.answer" -w '%{http_code}' --max-time $((PROFILE_S + 60)) \
        "http://127.0.0.1:$http_port/debug/pprof/profile?seconds=$PROFILE_S" \
        >"$WORK/ingotd.prof.status"
    ) &
    profile_pid=$!
  fi
  while kill -0 "$bench_pid" 2>/dev/null; do
    if ! server_alive; then
      kill -TERM "$bench_pid" 2>/dev/null || true
      wait "$bench_pid" 2>/dev/null || true
      echo "$SERVER_NAME exited while ingot-bench ran" >&2
      cat "$text" >&2
      return 1
    fi
    sleep 0.5
  done
  if ! wait "$bench_pid"; then
    echo "ingot-bench against $name failed:" >&2
    cat "$text" >&2
    return 1
  fi
  [[ -z $profile_pid ]] || wait "$profile_pid" || true
  sed "s/^/    [$name] /" "$text" >&2
  RESULT[$name.samples_per_s]=$(calc "%.0f" "$(jq -r '.values_per_s.mean' "$json")")
  RESULT[$name.send_seconds]=$(calc "%.2f" "$(jq -r '.send_seconds' "$json")")
  RESULT[$name.queryable_s]=$(calc "%.2f" "$(jq -r '.verify.queryable_after_s' "$json")")
  RESULT[$name.mb]=$(calc "%.1f" "$(jq -r '.bytes' "$json") / 1e6")
  RESULT[$name.cpu]=$(calc "%.2f" "$(cpu_seconds) - $cpu_before")
  RESULT[$name.hwm]=$(status_mb VmHWM)
}

log "workload: $POINTS samples, $SERIES series, timestamps from $(date -u -d "@$START_S" +%FT%TZ), work dir $WORK"

# Ingot
SERVER_NAME=ingotd
SERVER_LOG="$WORK/ingotd.log"
INGOT_TCP=$(free_port)
INGOT_HTTP=$(free_port)
log "starting ingotd (http $INGOT_HTTP)"
"$INGOTD" --config "$ROOT/conf/ingot.toml" --data-dir "$WORK/ingot-data" \
  --set "ingest.tcp_listen=127.0.0.1:$INGOT_TCP" --set "query.http_listen=127.0.0.1:$INGOT_HTTP" \
  --set "query.max_series=$LIMIT" >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$INGOT_HTTP/health" "$INGOT_TCP"
measure ingot "$INGOT_HTTP"
stop_server

# VictoriaMetrics
SERVER_NAME=victoria-metrics
SERVER_LOG="$WORK/victoria-metrics.log"
VM_TCP=$(free_port)
VM_HTTP=$(free_port)
log "starting victoria-metrics $(dpkg-query -W -f='${Version}' victoria-metrics 2>/dev/null || true)" \
  "(http $VM_HTTP)"
"$VM" -storageDataPath "$WORK/vm-data" -retentionPeriod 100y \
  -httpListenAddr "127.0.0.1:$VM_HTTP" -influxListenAddr "127.0.0.1:$VM_TCP" \
  -search.maxUniqueTimeseries "$LIMIT" -search.maxSeries "$LIMIT" >"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
wait_ready "http://127.0.0.1:$VM_HTTP/health" "$VM_TCP"
measure vm "$VM_HTTP"
stop_server
SERVER_LOG=""

ratio() { calc "%.2f" "$1 / $2"; }
r() { echo "${RESULT[$1]}"; }

echo
echo "### Remote write: $POINTS samples, $SERIES series, $CONNECTIONS connections, $SERIES_PER_REQUEST series x $SAMPLES_PER_SERIES sample(s) per request"
echo
echo "| server | samples/s (sending) | sent in s | queryable after s | server CPU s | peak RSS MB |"
echo "|---|---|---|---|---|---|"
echo "| Ingot | $(r ingot.samples_per_s) | $(r ingot.send_seconds) | $(r ingot.queryable_s) | $(r ingot.cpu) | $(r ingot.hwm) |"
echo "| VictoriaMetrics | $(r vm.samples_per_s) | $(r vm.send_seconds) | $(r vm.queryable_s) | $(r vm.cpu) | $(r vm.hwm) |"
echo "| Ingot / VictoriaMetrics | $(ratio "$(r ingot.samples_per_s)" "$(r vm.samples_per_s)") | $(ratio "$(r ingot.send_seconds)" "$(r vm.send_seconds)") | $(ratio "$(r ingot.queryable_s)" "$(r vm.queryable_s)") | $(ratio "$(r ingot.cpu)" "$(r vm.cpu)") | $(ratio "$(r ingot.hwm)" "$(r vm.hwm)") |"
echo
echo "Request bodies: $(r ingot.mb) MB (snappy)."

if ((PROFILE_S > 0)); then
  if [[ $(cat "$WORK/ingotd.prof.status" 2>/dev/null) == 200 ]] && command -v google-pprof >/dev/null; then
    mv "$WORK/ingotd.prof.answer" "$WORK/ingotd.prof"
    echo
    echo "### ingotd CPU profile ($PROFILE_S s during the run; $WORK/ingotd.prof)"
    echo
    echo '```'
    google-pprof --text "$INGOTD" "$WORK/ingotd.prof" 2>/dev/null | head -n 45
    echo '```'
    KEEP=1
  else
    echo "no profile: $(head -c 300 "$WORK/ingotd.prof.answer" 2>/dev/null || echo 'no answer')" >&2
  fi
fi
