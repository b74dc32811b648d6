// The wire format of Prometheus remote read, as far as the node reads and writes it.
//
// A request body is one snappy block (the block format) holding a protobuf `prometheus.ReadRequest`
// (schemas: prometheus/prometheus `prompb/remote.proto`, `types.proto`; the test reference is
// ingest/proto/):
//
//   ReadRequest   { repeated Query queries = 1; repeated ResponseType accepted_response_types = 2;
//   } Query         { int64 start_timestamp_ms = 1; int64 end_timestamp_ms = 2;
//                   repeated LabelMatcher matchers = 3; ReadHints hints = 4; }
//   LabelMatcher  { Type type = 1 (EQ 0, NEQ 1, RE 2, NRE 3); string name = 2; string value = 3; }
//
// The answer is one of two response types, the first of accepted_response_types the node speaks
// (SAMPLES when the list is empty):
//
//   SAMPLES (0): a snappy block of `ReadResponse`, Content-Type application/x-protobuf,
//     Content-Encoding snappy:
//       ReadResponse  { repeated QueryResult results = 1; }         // one per query, in order
//       QueryResult   { repeated TimeSeries timeseries = 1; }
//       TimeSeries    { repeated Label labels = 1; repeated Sample samples = 2; }
//       Label         { string name = 1; string value = 2; }
//       Sample        { double value = 1; int64 timestamp = 2; }  // milliseconds
//
//   STREAMED_XOR_CHUNKS (1): uncompressed frames, Content-Type
//     application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse; each frame is
//
//       +-----------------+---------------------------+----------------------------------+
//       | uvarint length  | CRC32-Castagnoli of the   | ChunkedReadResponse message      |
//       | of the message  | message, 4 bytes big end. | (`length` bytes)                 |
//       +-----------------+---------------------------+----------------------------------+
//
//       ChunkedReadResponse { repeated ChunkedSeries chunked_series = 1; int64 query_index = 2; }
//       ChunkedSeries       { repeated Label labels = 1; repeated Chunk chunks = 2; }
//       Chunk               { int64 min_time_ms = 1; int64 max_time_ms = 2;
//                             Encoding type = 3 (XOR 1); bytes data = 4; }
//
//     A frame carries one series (a long one is split over several frames, never interleaved
//     with another); chunk data is Prometheus' XOR chunk (query/xor_chunk_encoder.h).
//
// The wire format itself (tags, wire types, skipping unknown fields): config/protobuf_wire.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/protobuf_wire.h"

namespace ingot::remote_read {

using protobuf::kFixed32;
using protobuf::kFixed64;
using protobuf::kLengthDelimited;
using protobuf::kVarint;

// Field numbers (persisted in every client: never renumber).
inline constexpr std::uint32_t kReadRequestQueries = 1;
inline constexpr std::uint32_t kReadRequestAcceptedResponseTypes = 2;
inline constexpr std::uint32_t kQueryStartMs = 1;
inline constexpr std::uint32_t kQueryEndMs = 2;
inline constexpr std::uint32_t kQueryMatchers = 3;
inline constexpr std::uint32_t kMatcherType = 1;
inline constexpr std::uint32_t kMatcherName = 2;
inline constexpr std::uint32_t kMatcherValue = 3;

inline constexpr std::uint32_t kReadResponseResults = 1;
inline constexpr std::uint32_t kQueryResultTimeseries = 1;
inline constexpr std::uint32_t kTimeSeriesLabels = 1;
inline constexpr std::uint32_t kTimeSeriesSamples = 2;
inline constexpr std::uint32_t kLabelName = 1;
inline constexpr std::uint32_t kLabelValue = 2;
inline constexpr std::uint32_t kSampleValue = 1;
inline constexpr std::uint32_t kSampleTimestamp = 2;

inline constexpr std::uint32_t kChunkedReadResponseSeries = 1;
inline constexpr std::uint32_t kChunkedReadResponseQueryIndex = 2;
inline constexpr std::uint32_t kChunkedSeriesLabels = 1;
inline constexpr std::uint32_t kChunkedSeriesChunks = 2;
inline constexpr std::uint32_t kChunkMinTimeMs = 1;
inline constexpr std::uint32_t kChunkMaxTimeMs = 2;
inline constexpr std::uint32_t kChunkType = 3;
inline constexpr std::uint32_t kChunkData = 4;

// ReadRequest.ResponseType and LabelMatcher.Type values (persisted: never renumber).
inline constexpr std::uint64_t kResponseSamples = 0;
inline constexpr std::uint64_t kResponseStreamedXorChunks = 1;
inline constexpr std::uint64_t kMatchEqual = 0;
inline constexpr std::uint64_t kMatchNotEqual = 1;
inline constexpr std::uint64_t kMatchRegex = 2;
inline constexpr std::uint64_t kMatchNotRegex = 3;
// Chunk.Encoding XOR.
inline constexpr std::uint64_t kChunkEncodingXor = 1;

inline constexpr std::string_view kSamplesContentType = "application/x-protobuf";
inline constexpr std::string_view kStreamedContentType =
    "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse";

// Bytes of chunk data gathered into one frame before it is written: Prometheus' own server
// (storage/remote/codec.go) sends frames of about 1 MiB; its client refuses frames past 50 MB.
inline constexpr std::size_t kMaxFrameChunkBytes = 1 << 20;

// Sample timestamps are milliseconds; storage holds nanoseconds.
inline constexpr std::int64_t kNanosPerMilli = 1'000'000;

}  // namespace ingot::remote_read
