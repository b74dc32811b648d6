// The message a cluster node publishes to a partition of the log: a header, then the partition's
// lines of one or more write requests. Persisted in the log (retained for cluster.stream_max_age),
// so every constant here is a format: never renumber.
//
//   0  magic "IGB1"
//   4  u8 kind           1 = line protocol, 2 = Prometheus remote write
//   5  u8 precision      ingest::Precision of the lines' timestamps (0 ns, 1 us, 2 ms, 3 s, ...)
//   6  u8 flags          bit 0: the body is one zstd frame (decompressed: the lines below)
//   7  u8 reserved       0
//   8  i64 accept_ts_ns  the accepting node's clock when the message was sealed (little-endian)
//  16  body, kind 1: lines, each ending with '\n', each with a timestamp (the accepting node adds
//      its own time to a line written without one, so that every owner stores the same point);
//      kind 2: a protobuf `prometheus.WriteRequest` holding only `timeseries` fields, each
//      TimeSeries as its writer encoded it (precision 0)
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "config/status.h"

namespace ingot::cluster {

inline constexpr char kBatchMagic[4] = {'I', 'G', 'B', '1'};
inline constexpr std::size_t kBatchHeaderBytes = 16;
inline constexpr std::uint8_t kBatchKindLineProtocol = 1;  // persisted: never renumber
inline constexpr std::uint8_t kBatchKindRemoteWrite = 2;   // persisted: never renumber
inline constexpr std::uint8_t kMaxPrecision = 5;           // ingest::Precision::kHours
inline constexpr std::uint8_t kBatchFlagZstd = 1;          // persisted
// A decompressed body larger than this is refused as corrupt (batches are cut at 512 KiB of
// lines, cluster.batch_max_bytes).
inline constexpr std::size_t kMaxBatchBodyBytes = 4 << 20;

struct BatchHeader {
  std::uint8_t kind = kBatchKindLineProtocol;
  std::uint8_t precision = 0;
  std::uint8_t flags = 0;
  std::int64_t accept_ts_ns = 0;
};

// Writes the header over the first kBatchHeaderBytes of `*message` (which must hold them).
inline void WriteBatchHeader(const BatchHeader& header, std::string* message) {
  char* p = message->data();
  std::memcpy(p, kBatchMagic, 4);
  p[4] = static_cast<char>(header.kind);
  p[5] = static_cast<char>(header.precision);
  p[6] = static_cast<char>(header.flags);
  p[7] = 0;
  for (int i = 0; i < 8; ++i) {
    p[8 + i] = static_cast<char>(static_cast<std::uint64_t>(header.accept_ts_ns) >> (8 * i));
  }
}

// Validates a message's header and returns its body. Corruption naming the field.
inline Status ReadBatch(std::string_view message, BatchHeader* header, std::string_view* body) {
  if (message.size() < kBatchHeaderBytes) {
    return Status::Corruption("log message of " + std::to_string(message.size()) +
                              " bytes is shorter than its 16-byte header");
  }
  if (std::memcmp(message.data(), kBatchMagic, 4) != 0) {
    return Status::Corruption("log message without the IGB1 magic");
  }
  header->kind = static_cast<std::uint8_t>(message[4]);
  header->precision = static_cast<std::uint8_t>(message[5]);
  if (header->kind != kBatchKindLineProtocol && header->kind != kBatchKindRemoteWrite) {
    return Status::Corruption("log message of unknown kind " + std::to_string(header->kind));
  }
  header->flags = static_cast<std::uint8_t>(message[6]);
  if (header->precision > kMaxPrecision || (header->flags & ~kBatchFlagZstd) != 0 ||
      message[7] != 0) {
    return Status::Corruption("log message with precision " + std::to_string(header->precision) +
                              ", flags " + std::to_string(header->flags) +
                              " or its reserved byte set");
  }
  std::uint64_t ts = 0;
  for (int i = 0; i < 8; ++i) {
    ts |= static_cast<std::uint64_t>(static_cast<unsigned char>(message[8 + i])) << (8 * i);
  }
  header->accept_ts_ns = static_cast<std::int64_t>(ts);
  *body = message.substr(kBatchHeaderBytes);
  return Status::OK();
}

}  // namespace ingot::cluster
