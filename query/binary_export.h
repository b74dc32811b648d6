// The binary export format (`/api/v1/export?format=binary`): points as raw little-endian int64
// nanosecond timestamps and float64 values, framed per series. docs/query-api.md draws it.
//
//   stream  := stream_header { series_frame { points_frame } } [ error_frame ] end_frame
//   every frame starts with an 8-byte frame header: u32 tag, u32 length
//
//   stream_header  "INGX" (4 bytes), u8 version (kBinaryExportVersion), 3 bytes zero
//   series_frame   tag 1, length = M; M bytes of the series' labels as a JSON object
//                  ({"__name__":"cpu_usage","host":"a"}), zero padding to a multiple of 8
//   points_frame   tag 2, length = n (>= 1); n int64 timestamps (ns), then n float64 values
//   error_frame    tag 3, length = M; M bytes of UTF-8 message, zero padding to a multiple of 8
//   end_frame      tag 4, length = number of series frames in the stream
//
// Every frame length is a multiple of 8, so the arrays of a points frame are 8-byte aligned
// relative to the start of the stream; the server decodes chunks straight into them. A series
// may have several points frames (one per stored chunk, in time order). A stream without an end
// frame was cut short (the server hit an error after the header went out, or the connection
// dropped); an error frame says why.
//
// Thread safety: free functions; reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/status.h"

namespace ingot {

inline constexpr char kBinaryExportMagic[4] = {'I', 'N', 'G', 'X'};
inline constexpr std::uint8_t kBinaryExportVersion = 1;
inline constexpr std::size_t kBinaryFrameHeaderBytes = 8;
// persisted: never renumber
enum class BinaryFrameTag : std::uint32_t { kSeries = 1, kPoints = 2, kError = 3, kEnd = 4 };

// Appenders used by the export writer (they keep the 8-byte alignment of every frame).
void AppendBinaryStreamHeader(std::string* out);
void AppendBinaryFrameHeader(BinaryFrameTag tag, std::uint32_t length, std::string* out);
// A frame holding bytes (series, error), padded with zeros to a multiple of 8.
void AppendBinaryTextFrame(BinaryFrameTag tag, std::string_view text, std::string* out);

struct ExportedSeries {
  std::string metric_json;
  std::vector<std::int64_t> ts_ns;
  std::vector<double> values;
};

// Parses a whole stream (for clients, tests and benchmarks). Corruption when the framing is
// broken or the end frame is missing; an error frame becomes an IOError with its message.
Status ParseBinaryExport(std::string_view stream, std::vector<ExportedSeries>* out);

}  // namespace ingot
