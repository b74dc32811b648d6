// The wire format of Prometheus remote write 1.0, as far as the decoder reads it.
//
// A request body is one snappy block (the block format, not the framed stream format) whose
// content is a protobuf `prometheus.WriteRequest` (ingest/proto/remote.proto, types.proto):
//
//   WriteRequest  { repeated TimeSeries timeseries = 1; reserved 2;
//                   repeated MetricMetadata metadata = 3; }
//   TimeSeries    { repeated Label labels = 1; repeated Sample samples = 2;
//                   repeated Exemplar exemplars = 3; repeated Histogram histograms = 4; }
//   Label         { string name = 1; string value = 2; }
//   Sample        { double value = 1; int64 timestamp = 2; }   // milliseconds
//
// The wire format itself (tags, wire types, skipping unknown fields): config/protobuf_wire.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config/protobuf_wire.h"

namespace ingot::ingest::remote_write {

using protobuf::kEndGroup;
using protobuf::kFixed32;
using protobuf::kFixed64;
using protobuf::kLengthDelimited;
using protobuf::kStartGroup;
using protobuf::kVarint;

// Field numbers (persisted in every client: never renumber).
inline constexpr std::uint32_t kWriteRequestTimeseries = 1;
inline constexpr std::uint32_t kWriteRequestMetadata = 3;
inline constexpr std::uint32_t kTimeSeriesLabels = 1;
inline constexpr std::uint32_t kTimeSeriesSamples = 2;
inline constexpr std::uint32_t kTimeSeriesExemplars = 3;
inline constexpr std::uint32_t kTimeSeriesHistograms = 4;
inline constexpr std::uint32_t kLabelName = 1;
inline constexpr std::uint32_t kLabelValue = 2;
inline constexpr std::uint32_t kSampleValue = 1;
inline constexpr std::uint32_t kSampleTimestamp = 2;

// Prometheus' staleness marker: a NaN with this exact payload ends a series; it is stored as is.
inline constexpr std::uint64_t kStaleNaNBits = 0x7ff0000000000002ull;

// Sample timestamps are milliseconds; storage holds nanoseconds.
inline constexpr std::int64_t kNanosPerMilli = 1'000'000;

// The first bytes of a framed snappy stream (its stream identifier chunk), which remote write
// does not use; recognised to say so in the error.
inline constexpr char kSnappyFramedMagic[] = "\xff\x06\x00\x00sNaPpY";
inline constexpr std::size_t kSnappyFramedMagicBytes = 10;

}  // namespace ingot::ingest::remote_write
