#!/usr/bin/env bash
# Long runs that do not fit in CI. Usage: tests/soak/soak.sh [fuzz|crash|connections|all]...
#   fuzz         every fuzzer of tests/fuzz/run_briefly.sh for SOAK_FUZZ_RUNS executions (10000000)
#   crash        the crash-loop end-to-end test for SOAK_CRASH_ROUNDS rounds (100), seed
#                SOAK_CRASH_SEED (default: the current time, printed)
#   connections  a real ingotd with SOAK_CONNECTIONS (1000) connections writing steadily for
#                SOAK_DURATION (30m), half of them over TCP and half over HTTP /write (two
#                ingot-bench processes at SOAK_RATE values/s each, 25000); the node's RSS and open
#                descriptors are sampled every SOAK_SAMPLE_S (10) seconds into
#                build-soak/connections.csv. Passes when every point is queryable afterwards, no
#                write failed, the node stops cleanly and RSS and descriptors stayed flat: the
#                maximum over the last quarter of the samples is at most 1.25 x the maximum over
#                the second quarter plus 64 MiB (RSS), plus 16 (descriptors).
#   all          the three, in that order
# Expects ingotd, ingot-bench and crash_loop_test built in build-soak (./dev soak builds them).
# Writes a summary to build-soak/soak-report.md and the logs beside it; exits non-zero when a
# part failed (the other parts still run).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${root}/build-soak"
report="${out}/soak-report.md"
fuzz_runs="${SOAK_FUZZ_RUNS:-10000000}"
crash_rounds="${SOAK_CRASH_ROUNDS:-100}"
crash_seed="${SOAK_CRASH_SEED:-$(date +%s)}"
connections="${SOAK_CONNECTIONS:-1000}"
duration="${SOAK_DURATION:-30m}"
rate="${SOAK_RATE:-25000}"
sample_s="${SOAK_SAMPLE_S:-10}"

parts=("$@")
if ((${#parts[@]} == 0)) || [[ " ${parts[*]} " == *" all "* ]]; then parts=(fuzz crash connections); fi
for p in "${parts[@]}"; do
  case "$p" in
    fuzz | crash | connections) ;;
    *)
      echo "soak: unknown part '$p' (fuzz, crash, connections or all)" >&2
      exit 2
      ;;
  esac
done

mkdir -p "$out"
{
  echo "# Soak report"
  echo
  echo "- started: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')"
  echo "- parts: ${parts[*]}"
} >"$report"
failed=()

log() { printf '\033[1m==> soak: %s\033[0m\n' "$*" >&2; }
section() { printf '\n## %s\n\n' "$1" >>"$report"; }

soak_fuzz() {
  section "Fuzzers (${fuzz_runs} executions each)"
  local logfile="${out}/fuzz.log"
  log "fuzzing, ${fuzz_runs} executions per fuzzer (log: ${logfile})"
  local status=0
  INGOT_FUZZ_RUNS="$fuzz_runs" "${root}/tests/fuzz/run_briefly.sh" >"$logfile" 2>&1 || status=$?
  echo "| fuzzer | executions | exec/s | corpus | finding |" >>"$report"
  echo "|---|---|---|---|---|" >>"$report"
  # run_briefly.sh prints "fuzzing NAME (...)" before each fuzzer, libFuzzer its final stats.
  awk -v build="${root}/build-fuzz" '
    function flush() {
      if (name == "") return
      cmd = "ls " build "/findings_" name " 2>/dev/null | wc -l"; cmd | getline found; close(cmd)
      cmd = "ls " build "/corpus_" name " 2>/dev/null | wc -l"; cmd | getline corpus; close(cmd)
      printf "| %s | %s | %s | %s files | %s |\n", name, (units == "" ? "?" : units),
             (rate == "" ? "?" : rate), corpus, (err != "" ? err : (found > 0 ? found " input(s) kept" : "none"))
    }
    /^fuzzing / { flush(); name = $2; units = ""; rate = ""; err = "" }
    /stat::number_of_executed_units:/ { units = $2 }
    /stat::average_exec_per_sec:/ { rate = $2 }
    /^SUMMARY: / && err == "" { err = substr($0, 10) }
    /^==[0-9]+== ERROR: libFuzzer/ && err == "" { err = substr($0, index($0, "ERROR:")) }
    END { flush() }' "$logfile" >>"$report"
  if ((status != 0)); then
    echo >>"$report"
    echo "**failed** (exit ${status}); see ${logfile}: $(tail -n 1 "$logfile")" >>"$report"
    failed+=(fuzz)
  fi
}

soak_crash() {
  section "Crash loop (${crash_rounds} rounds, seed ${crash_seed})"
  local logfile="${out}/crash.log"
  log "crash loop, ${crash_rounds} rounds, seed ${crash_seed} (log: ${logfile})"
  local status=0
  INGOT_CRASH_ROUNDS="$crash_rounds" INGOT_CRASH_SEED="$crash_seed" \
    "${out}/tests/e2e/crash_loop_test" >"$logfile" 2>&1 || status=$?
  local summary
  summary=$(grep -E '^crash loop: [0-9]+ rounds' "$logfile" | tail -n 1)
  if ((status == 0)); then
    echo "passed: ${summary#crash loop: }" >>"$report"
  else
    echo "**failed** (exit ${status}); rerun with INGOT_CRASH_SEED=${crash_seed}" \
      "INGOT_CRASH_ROUNDS=${crash_rounds}; see ${logfile}" >>"$report"
    grep -E 'Failure|error:|seed [0-9]+:' "$logfile" | head -n 5 | sed 's/^/    /' >>"$report"
    failed+=(crash)
  fi
}

# rss_kib PID, fds PID: from /proc.
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

soak_connections() {
  section "Connections (${connections} for ${duration}, ${rate} values/s per protocol)"
  local data="${out}/connections-data" nodelog="${out}/connections-ingotd.log"
  local csv="${out}/connections.csv"
  rm -rf "$data"
  log "connections: ${connections} for ${duration} (node log: ${nodelog}, samples: ${csv})"
  local half=$((connections / 2))
  "${out}/node/ingotd" --data-dir "$data" --set ingest.tcp_listen=127.0.0.1:0 \
    --set query.http_listen=127.0.0.1:0 --set "ingest.max_connections=$((connections + 64))" \
    --set "query.max_connections=$((connections + 64))" 2>"$nodelog" &
  local node=$!
  local tcp_port="" http_port="" line
  for _ in $(seq 300); do
    line=$(grep -oE 'ready: line protocol on tcp port [0-9]+, HTTP on port [0-9]+' "$nodelog" || true)
    if [[ -n "$line" ]]; then
      tcp_port=$(echo "$line" | awk '{ print $7 }' | tr -d ,)
      http_port=$(echo "$line" | awk '{ print $11 }')
      break
    fi
    kill -0 "$node" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$http_port" ]]; then
    echo "**failed**: ingotd did not start; see ${nodelog}" >>"$report"
    kill -9 "$node" 2>/dev/null
    failed+=(connections)
    return
  fi
  # Two workloads on distinct series: the TCP one without tags after hostname, the HTTP one with
  # a region tag; each verifies its own series.
  local bench="${out}/bench/ingot-bench"
  local common=(--connections "$half" --hosts "$half" --fields 10 --rate "$rate"
    --duration "$duration" --points 0 --verify "http://127.0.0.1:${http_port}" -q)
  "$bench" ingest --target "tcp://127.0.0.1:${tcp_port}" --tags 0 \
    --verify-selector '{__name__=~"cpu_.*",region=""}' --json "${out}/bench-tcp.json" \
    "${common[@]}" >"${out}/bench-tcp.log" 2>&1 &
  local bench_tcp=$!
  "$bench" ingest --target "http://127.0.0.1:${http_port}/write" --tags 1 \
    --verify-selector '{__name__=~"cpu_.*",region!=""}' --json "${out}/bench-http.json" \
    "${common[@]}" >"${out}/bench-http.log" 2>&1 &
  local bench_http=$!
  echo "elapsed_s,rss_kib,open_fds" >"$csv"
  local start=$SECONDS
  while kill -0 "$bench_tcp" 2>/dev/null || kill -0 "$bench_http" 2>/dev/null; do
    echo "$((SECONDS - start)),$(rss_kib "$node"),$(fds "$node")" >>"$csv"
    sleep "$sample_s"
  done
  local tcp_status=0 http_status=0
  wait "$bench_tcp" || tcp_status=$?
  wait "$bench_http" || http_status=$?
  kill -TERM "$node"
  local node_status=0
  wait "$node" || node_status=$?

  local ok=1 kind
  for kind in tcp http; do
    local json="${out}/bench-${kind}.json" status_var="${kind}_status"
    if [[ ! -s "$json" ]]; then
      echo "- ${kind}: **no report** (exit ${!status_var}); see ${out}/bench-${kind}.log" >>"$report"
      ok=0
      continue
    fi
    jq -r --arg kind "$kind" '"- \($kind): \(.connections) connections, \(.values) values sent in \(.send_seconds) s, errors: \(.errors | tostring), verified: \(.verify.counted_values) of \(.verify.expected_values) queryable (complete: \(.verify.complete))"' "$json" >>"$report"
    if [[ "${!status_var}" != 0 ]] || [[ $(jq -r '.verify.complete' "$json") != true ]]; then ok=0; fi
  done
  echo "- ingotd stopped with exit ${node_status}" >>"$report"
  ((node_status == 0)) || ok=0
  # min/max/last, and the flatness rule of the header, over the samples.
  local verdict
  verdict=$(awk -F, 'NR > 1 { n++; rss[n] = $2; fd[n] = $3 }
    END {
      if (n < 4) { print "- too few samples (" n ") to judge"; print "FLAT 0"; exit }
      rmin = rmax = rss[1]; fmin = fmax = fd[1]
      for (i = 1; i <= n; i++) {
        if (rss[i] < rmin) rmin = rss[i]; if (rss[i] > rmax) rmax = rss[i]
        if (fd[i] < fmin) fmin = fd[i]; if (fd[i] > fmax) fmax = fd[i]
      }
      q = int(n / 4); r2 = f2 = 0; r4 = f4 = 0
      for (i = q + 1; i <= 2 * q; i++) { if (rss[i] > r2) r2 = rss[i]; if (fd[i] > f2) f2 = fd[i] }
      for (i = n - q + 1; i <= n; i++) { if (rss[i] > r4) r4 = rss[i]; if (fd[i] > f4) f4 = fd[i] }
      printf "- %d samples: RSS min %.1f MiB, max %.1f MiB, last %.1f MiB; open descriptors min %d, max %d, last %d\n",
             n, rmin / 1024, rmax / 1024, rss[n] / 1024, fmin, fmax, fd[n]
      printf "- last quarter vs second quarter (max): RSS %.1f vs %.1f MiB, descriptors %d vs %d\n",
             r4 / 1024, r2 / 1024, f4, f2
      flat = (r4 <= 1.25 * r2 + 65536) && (f4 <= f2 + 16)
      print "FLAT " flat
    }' "$csv")
  echo "$verdict" | grep -v '^FLAT' >>"$report"
  if [[ "$verdict" == *"FLAT 1"* ]]; then
    echo "- RSS and descriptors stayed flat" >>"$report"
  else
    echo "- **RSS or descriptors did not stay flat** (see ${csv})" >>"$report"
    ok=0
  fi
  if ((ok)); then echo "passed" >>"$report"; else echo "**failed**" >>"$report"; failed+=(connections); fi
}

for p in "${parts[@]}"; do
  "soak_${p}"
done
{
  echo
  echo "- finished: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  if ((${#failed[@]} == 0)); then echo "- result: passed"; else echo "- result: **failed: ${failed[*]}**"; fi
} >>"$report"
log "report: ${report}"
((${#failed[@]} == 0))
