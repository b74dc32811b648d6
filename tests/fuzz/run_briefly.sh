#!/bin/sh
# Builds the fuzzers (codec decoders, line protocol, PromQL, HTTP requests) with clang in their
# own build dir and runs each for a short while.
# Usage: tests/fuzz/run_briefly.sh [seconds-per-fuzzer]   (default 15)
# The whole build gets coverage instrumentation (fuzzer-no-link): without it libFuzzer sees only
# the harness and mutates blind.
set -eu
seconds="${1:-15}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${root}/build-fuzz"
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DINGOT_FUZZ=ON \
  -DINGOT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
ninja -C "$build" -j2 fuzz_decode_doubles fuzz_decode_floats fuzz_decode_ints \
  fuzz_line_protocol fuzz_promql fuzz_http_request
for f in doubles floats ints; do
  corpus="${build}/corpus_${f}"
  mkdir -p "$corpus"
  echo "fuzzing decode_${f} for ${seconds}s"
  "${build}/tests/fuzz/fuzz_decode_${f}" -max_total_time="$seconds" -max_len=9000 \
    -print_final_stats=1 "$corpus"
done
for f in line_protocol promql http_request; do
  corpus="${build}/corpus_${f}"
  mkdir -p "$corpus"
  echo "fuzzing ${f} for ${seconds}s"
  "${build}/tests/fuzz/fuzz_${f}" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -print_final_stats=1 "$corpus"
done
