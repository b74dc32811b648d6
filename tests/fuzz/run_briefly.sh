#!/bin/sh
# Builds the fuzzers (codec decoders, line protocol, PromQL, HTTP requests, remote write) with
# clang in their own build dir and runs each for a short while.
# Usage: tests/fuzz/run_briefly.sh [seconds-per-fuzzer]   (default 15)
# INGOT_FUZZ_RUNS=N runs each fuzzer for N executions instead (./dev soak: 10 M). Every fuzzer
# runs even when an earlier one found something; the exit status is non-zero if any did. Inputs
# that crash are kept in build-fuzz/findings_<fuzzer>/.
# The whole build gets coverage instrumentation (fuzzer-no-link): without it libFuzzer sees only
# the harness and mutates blind.
set -eu
seconds="${1:-15}"
limit="-max_total_time=${seconds}"
if [ -n "${INGOT_FUZZ_RUNS:-}" ]; then limit="-runs=${INGOT_FUZZ_RUNS}"; fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${root}/build-fuzz"
CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DINGOT_FUZZ=ON \
  -DINGOT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
ninja -C "$build" -j2 fuzz_decode_doubles fuzz_decode_floats fuzz_decode_ints fuzz_decode_alp_zstd \
  fuzz_decode_dictionary fuzz_decode_alp_radix fuzz_decode_chunk fuzz_decode_alp_rice \
  fuzz_decode_alp_huffman fuzz_decode_alp_ranked \
  fuzz_line_protocol fuzz_promql fuzz_http_request fuzz_remote_write
failed=""
# run NAME MAX_LEN [libFuzzer flags...]
run() {
  name="$1"
  max_len="$2"
  shift 2
  corpus="${build}/corpus_${name}"
  findings="${build}/findings_${name}"
  mkdir -p "$corpus" "$findings"
  echo "fuzzing ${name} (${limit})"
  if ! "${build}/tests/fuzz/fuzz_${name}" "$limit" -max_len="$max_len" \
    -artifact_prefix="${findings}/" -print_final_stats=1 "$@" "$corpus"; then
    failed="${failed} ${name}"
  fi
}
# The dictionary, alp_radix, alp_rice, alp_huffman and alp_ranked decoders start from hand-made
# blocks (tests/fuzz/*_seeds/: the count, then the block after its encoding byte and count): one
# per index layout; one with deltas and one with offsets and an exception; one per Rice, Huffman
# or ranked stream, Rice codes with escapes (second differences with steps, a counter's resets),
# Rice codes in lane order (the older seeds are in block order, which the decoder still reads),
# ranked codes with each Rice parameter and with categories past 25 (the kernel's 64-bit lanes).
# The chunk decoder starts from sealed chunks (two count bytes, then the chunk): regular and
# irregular timestamps, float and integer values.
for f in dictionary alp_radix chunk alp_rice alp_huffman alp_ranked; do
  mkdir -p "${build}/corpus_decode_${f}"
  cp "${root}"/tests/fuzz/${f}_seeds/*.bin "${build}/corpus_decode_${f}/"
done
for f in doubles floats ints alp_zstd dictionary alp_radix chunk alp_rice alp_huffman alp_ranked; do
  run "decode_${f}" 9000
done
for f in line_protocol promql http_request; do
  run "$f" 4096 -timeout=10
done
# Remote write starts from a few valid requests (text protobuf in remote_write_seeds/, encoded
# with protoc; the leading 0 byte asks the harness to compress the rest with snappy).
mkdir -p "${build}/corpus_remote_write"
for seed in "${root}"/tests/fuzz/remote_write_seeds/*.txtpb; do
  out="${build}/corpus_remote_write/seed_$(basename "$seed" .txtpb)"
  { printf '\000'; protoc --encode=prometheus.WriteRequest -I "$root" \
      "${root}/ingest/proto/remote.proto" <"$seed"; } >"$out"
done
run remote_write 8192 -timeout=10
if [ -n "$failed" ]; then
  echo "fuzzers that found something:${failed}" >&2
  exit 1
fi
