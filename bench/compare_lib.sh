# Shared by the bench/compare_*.sh scripts (sourced): a server process under measurement
# (SERVER_PID, SERVER_NAME, SERVER_LOG), ports, readiness, CPU and RSS readings.

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

SERVER_PID=""
SERVER_NAME=""
SERVER_LOG=""

# make_work_dir NAME: WORK becomes a new temp dir, and at exit (or on INT/TERM) the server is
# stopped, the tail of its log shown if the run failed, and WORK removed unless KEEP=1 or the run
# failed. A script with more to stop at exit defines cleanup_extra.
make_work_dir() {
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")"
  trap compare_cleanup EXIT
  trap 'exit 130' INT TERM
}

compare_cleanup() {
  local rc=$?
  if declare -F cleanup_extra >/dev/null; then cleanup_extra; fi
  if ((rc != 0)) && [[ -n $SERVER_LOG && -f $SERVER_LOG ]]; then
    echo "---- last lines of $SERVER_NAME's log ($SERVER_LOG)" >&2
    tail -n 40 "$SERVER_LOG" >&2 || true
  fi
  stop_server
  if ((${KEEP:-0} || rc != 0)); then
    echo "data directories and logs kept in $WORK" >&2
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}

stop_server() {
  [[ -n $SERVER_PID ]] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  local i
  for ((i = 0; i < 300; i++)); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "$SERVER_NAME did not stop within 30 s of SIGTERM; killing it" >&2
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

# A port nobody listens on now (the server binds it a moment later; a collision just fails loudly).
# Below the kernel's ephemeral range where it can, as a port that an outgoing connection uses
# there cannot be bound, yet does not answer a connect.
free_port() {
  local port i low=61000
  { read -r low _ </proc/sys/net/ipv4/ip_local_port_range; } 2>/dev/null || true
  ((low > 21000)) || low=61000
  for ((i = 0; i < 100; i++)); do
    port=$((20000 + RANDOM % (low - 20000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "${0##*/}: no free port found" >&2
  return 1
}

# Whether the server still runs. `kill -0` is not enough: it succeeds on a zombie, and a server
# that died is not reaped while a command substitution runs.
# Builtins only: it runs twice a second during the measurement.
server_alive() {
  local stat state
  { read -r stat <"/proc/$SERVER_PID/stat"; } 2>/dev/null || return 1
  state=${stat##*) }
  state=${state%% *}
  [[ $state != Z && $state != X ]]
}

# wait_ready URL TCP_PORT: until the HTTP URL answers 2xx and the TCP port accepts, at most 60 s.
wait_ready() {
  local url=$1 tcp_port=$2 i
  for ((i = 0; i < 600; i++)); do
    if ! server_alive; then
      echo "$SERVER_NAME exited during start-up" >&2
      return 1
    fi
    if curl -sf -o /dev/null --max-time 1 "$url" &&
      (exec 3<>"/dev/tcp/127.0.0.1/$tcp_port") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "$SERVER_NAME was not ready after 60 s ($url, TCP port $tcp_port)" >&2
  return 1
}

CLK_TCK=$(getconf CLK_TCK)
# CPU seconds (user + system) the server has used so far. Fields 14 and 15 of /proc/PID/stat,
# counted after the ")" that ends the command name.
cpu_seconds() {
  sed 's/^.*) //' "/proc/$SERVER_PID/stat" | awk -v hz="$CLK_TCK" '{ printf "%.2f", ($12 + $13) / hz }'
}
# /proc/PID/status fields in MB (10^6 bytes): VmHWM is the peak RSS, VmRSS the current one.
status_mb() {
  awk -v key="$1:" '$1 == key { printf "%.1f", $2 * 1024 / 1e6 }' "/proc/$SERVER_PID/status"
}
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
