#!/usr/bin/env bash
# Bytes on disk for real data, Ingot against VictoriaMetrics in one run. Each data file becomes
# one series (10 s apart, values as shortest round-trip decimal text) written over line protocol
# into a fresh ingotd and a fresh victoria-metrics. Both then merge what they hold (Ingot:
# POST /internal/force_merge, then a clean stop, counting its RocksDB .sst files; VictoriaMetrics:
# /internal/force_flush and /internal/force_merge, counting its data/ folder once it stops
# changing). Run it through `./dev compare-real-data [files]`, which installs victoria-metrics and
# builds ingotd (Release) first.
#
# Files: raw little-endian float64 (.bin) or one value a line (.csv); default: the ALP row groups
# in ../shared/datasets/alp-rowgroups. A last row, tsbs_cpu, is ingot-bench's TSBS-like cpu
# workload (100 hosts, 10 fields, 9 tags, 2-decimal walks, 10 s apart): --cpu-values N values of
# it (default 1000000; 0 leaves the row out). It is not in the mean, which is over the files.
#
# Both stores have a fixed cost that does not grow with the data (VictoriaMetrics about 49 KB:
# its indexdb and part metadata; Ingot about 2 KB), which is 0.37 B/value of a 131,072-value file
# and 2.2 of a 22,000-value one. So each row also loads the file's first HEAD values (default 100,
# --head N) into a fresh pair of servers and reports the marginal bytes per value,
# (bytes(all) - bytes(head)) / (values - head): what the next value costs, the codec's share.
#
# --unseen: the files are real series from Debian packages' data (bench/fetch_unseen_data.sh,
# downloaded into build/unseen-data), which no codec decision here was measured on.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INGOTD="${INGOTD:-$ROOT/build/node/ingotd}"  # another build: INGOTD=path
VM="$(command -v victoria-metrics || true)"
for tool in "$INGOTD" "$VM" "$(command -v python3 || true)" "$(command -v curl || true)"; do
  if [[ -z $tool || ! -x $tool ]]; then
    echo "compare_real_data.sh: missing ${tool:-victoria-metrics, python3 or curl}; run ./dev compare-real-data" >&2
    exit 2
  fi
done
CPU_VALUES=1000000
HEAD=100
FILES=()
while (($# > 0)); do
  case $1 in
    --cpu-values) CPU_VALUES=${2:?--cpu-values needs a number}; shift 2 ;;
    --head) HEAD=${2:?--head needs a number}; shift 2 ;;
    --unseen) mapfile -t -O "${#FILES[@]}" FILES < <("$ROOT/bench/fetch_unseen_data.sh" "$ROOT/build/unseen-data"); shift ;;
    *) FILES+=("$1"); shift ;;
  esac
done
if ((${#FILES[@]} == 0)); then FILES=("$ROOT"/../shared/datasets/alp-rowgroups/*.bin); fi

source "$(dirname "${BASH_SOURCE[0]}")/compare_lib.sh"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/compare-real.XXXXXX")"
cleanup() {
  stop_server
  rm -rf "$WORK"
}
trap cleanup EXIT

T0=1704067200  # 2024-01-01T00:00:00Z: every file's points fall in one monthly partition
PARTITION=2024_01

# to_lines FILE OUT: one line per value, "real value=<v> <t>", t in seconds.
to_lines() {
  python3 - "$1" "$2" "$T0" <<'EOF'
import struct, sys
path, out, t0 = sys.argv[1], sys.argv[2], int(sys.argv[3])
if path.endswith(".bin"):
    raw = open(path, "rb").read()
    values = struct.unpack("<%dd" % (len(raw) // 8), raw[: len(raw) // 8 * 8])
else:
    values = [float(x) for x in open(path).read().split()]
with open(out, "w") as f:
    for i, v in enumerate(values):
        f.write("real value=%r %d\n" % (v, t0 + 10 * i))
print(len(values))
EOF
}

# cpu_lines OUT: CPU_VALUES values of ingot-bench's cpu workload as line protocol (ns
# timestamps), captured from its TCP target by a listener that writes what it receives. Prints the
# number of values.
cpu_lines() {
  local out=$1 port
  port=$(free_port)
  python3 - "$port" "$out" <<'EOF' &
import socket, sys
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(1)
open(sys.argv[2] + ".ready", "w").close()
conn, _ = srv.accept()
with open(sys.argv[2], "wb") as f:
    while True:
        data = conn.recv(1 << 20)
        if not data:
            break
        f.write(data)
EOF
  local listener=$!
  local i
  for ((i = 0; i < 100; i++)); do
    if [[ -e $out.ready ]]; then break; fi
    sleep 0.1
  done
  "$ROOT/build/bench/ingot-bench" ingest --target "tcp://127.0.0.1:$port" --points "$CPU_VALUES" \
    --hosts 100 --fields 10 --tags 9 --decimals 2 --interval 10s --start 2024-01-01T00:00:00Z -q \
    >/dev/null
  wait "$listener"
  echo "$CPU_VALUES"
}

# post_lines URL FILE: the file in pieces of 20,000 lines; fails on any non-2xx answer.
post_lines() {
  local url=$1 file=$2 piece
  split -l 20000 "$file" "$WORK/piece."
  for piece in "$WORK"/piece.*; do
    curl -sf -o /dev/null --data-binary "@$piece" "$url" || {
      echo "compare_real_data.sh: POST $url failed" >&2
      return 1
    }
  done
  rm -f "$WORK"/piece.*
}

# Bytes of a folder once it has not changed for 3 s (background merges done), at most 120 s.
settled_bytes() {
  local dir=$1 last=-1 now i
  for ((i = 0; i < 120; i++)); do
    now=$(du -sb "$dir" | cut -f1)
    if [[ $now == "$last" ]] && ((i >= 3)); then break; fi
    last=$now
    sleep 1
  done
  echo "$now"
}

ingot_bytes() {
  local lines=$1 data="$WORK/ingot"
  rm -rf "$data"
  local http tcp
  http=$(free_port)
  tcp=$(free_port)
  SERVER_NAME=ingotd
  SERVER_LOG="$WORK/ingotd.log"
  "$INGOTD" --data-dir "$data" --set "query.http_listen=127.0.0.1:$http" \
    --set "ingest.tcp_listen=127.0.0.1:$tcp" >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  wait_ready "http://127.0.0.1:$http/health" "$tcp"
  post_lines "http://127.0.0.1:$http/write?precision=$PRECISION" "$lines"
  curl -sf -o /dev/null -X POST "http://127.0.0.1:$http/internal/force_merge"
  stop_server
  find "$data/db" -name '*.sst' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'
}

vm_bytes() {
  local lines=$1 data="$WORK/vm"
  rm -rf "$data"
  local http
  http=$(free_port)
  SERVER_NAME=victoria-metrics
  SERVER_LOG="$WORK/vm.log"
  "$VM" -storageDataPath="$data" -retentionPeriod=100y -httpListenAddr="127.0.0.1:$http" \
    -loggerLevel=ERROR >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!
  # No TCP listener to wait for: the HTTP port stands for both.
  wait_ready "http://127.0.0.1:$http/health" "$http"
  post_lines "http://127.0.0.1:$http/write?precision=$PRECISION" "$lines"
  curl -sf -o /dev/null "http://127.0.0.1:$http/internal/force_flush"
  curl -sf -o /dev/null "http://127.0.0.1:$http/internal/force_merge?partition_prefix=$PARTITION"
  local bytes
  bytes=$(settled_bytes "$data/data")
  stop_server
  echo "$bytes"
}

echo "| data set | values | Ingot B/value | VictoriaMetrics B/value | ratio | marginal: Ingot B/value | VictoriaMetrics B/value | ratio |"
echo "|---|---|---|---|---|---|---|---|"
sum_ratio=0
sum_marginal=0
count=0
# row NAME LINES VALUES HEAD_VALUES: one row of the table (both servers, the same lines, then the
# same first HEAD lines, which hold HEAD_VALUES values) into $WORK/row; prints the ratio and the
# marginal ratio.
row() {
  local name=$1 lines=$2 n=$3 hn=$4 ib vb ih vh ratio marginal
  ib=$(ingot_bytes "$lines")
  vb=$(vm_bytes "$lines")
  head -n "$HEAD" "$lines" >"$lines.head"
  ih=$(ingot_bytes "$lines.head")
  vh=$(vm_bytes "$lines.head")
  ratio=$(calc "%.3f" "$ib / $vb")
  marginal=$(calc "%.3f" "($ib - $ih) / ($vb - $vh)")
  echo "| $name | $n | $(calc "%.3f" "$ib / $n") | $(calc "%.3f" "$vb / $n") | $ratio" \
    "| $(calc "%.3f" "($ib - $ih) / ($n - $hn)") | $(calc "%.3f" "($vb - $vh) / ($n - $hn)")" \
    "| $marginal |" >"$WORK/row"
  echo "$ratio $marginal"
}
PRECISION=s
for file in "${FILES[@]}"; do
  name=$(basename "$file")
  name=${name%.*}
  lines="$WORK/$name.lp"
  n=$(to_lines "$file" "$lines")
  log "$name: $n values"
  if ((n <= HEAD)); then
    echo "compare_real_data.sh: $file holds $n values, not more than --head $HEAD" >&2
    exit 2
  fi
  read -r ratio marginal < <(row "$name" "$lines" "$n" "$HEAD")
  cat "$WORK/row"
  sum_ratio=$(calc "%.6f" "$sum_ratio + $ratio")
  sum_marginal=$(calc "%.6f" "$sum_marginal + $marginal")
  count=$((count + 1))
done
if ((CPU_VALUES > 0)); then
  lines="$WORK/tsbs_cpu.lp"
  n=$(cpu_lines "$lines")
  log "tsbs_cpu: $n values of ingot-bench's cpu workload"
  PRECISION=ns
  # Each line holds the 10 fields of one host (the first 100 lines: one instant of every host).
  row tsbs_cpu "$lines" "$n" $((HEAD * 10)) >/dev/null
  cat "$WORK/row"
fi
echo
echo "mean ratio (Ingot / VictoriaMetrics): $(calc "%.3f" "$sum_ratio / $count")," \
  "marginal: $(calc "%.3f" "$sum_marginal / $count")"
