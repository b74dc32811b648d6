// ExportWriter: produces the body of `/api/v1/export` piece by piece, for chunked transfer.
//
// Formats (docs/query-api.md):
//   json    one line per series: {"metric":{...},"values":[...],"timestamps":[...]} with
//           millisecond timestamps (fractional when the point is not on a whole millisecond)
//   csv     header `series,timestamp,value`, one row per point; `series` is the quoted
//           `name{label="value",...}`, timestamps in milliseconds as in json
//   binary  the framing of query/binary_export.h: chunks decode straight into the output piece
//
// Series without points in the range are left out (json, csv) or have no points frame (binary).
// Each piece is about kPieceBytes (a json/csv series is never split; a binary series is split
// between chunks). Reads are read-your-writes (see SeriesReader); a storage error after the first
// piece ends the body early with an in-band error: a `{"error":"..."}` line (json), a
// `# error: ...` line (csv) or an error frame (binary).
//
// Thread safety: not thread-safe; one writer per response. `storage` and the catalog that owns
// the SeriesInfo entries must outlive the writer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/storage.h"
#include "config/status.h"
#include "query/series_catalog.h"
#include "chunk/series_reader.h"

namespace ingot {

enum class ExportFormat { kJson, kCsv, kBinary };

// "json" (also ""), "csv", "binary"; InvalidArgument otherwise.
Status ParseExportFormat(std::string_view text, ExportFormat* format);
const char* ExportContentType(ExportFormat format);

// Upper bound of the points an export of `series` over [start_ns, end_ns] holds, from chunk
// headers and the head buffers (nothing is decoded).
Status EstimateExportPoints(Storage& storage, const std::vector<SeriesRef>& series,
                            std::int64_t start_ns, std::int64_t end_ns, std::uint64_t* points);

class ExportWriter {
 public:
  static constexpr std::size_t kPieceBytes = 1 << 20;

  ExportWriter(Storage& storage, std::vector<SeriesRef> series, std::int64_t start_ns,
               std::int64_t end_ns, ExportFormat format);

  // Appends the next piece to `*out`; returns false once the body is complete.
  bool Next(std::string* out);

  std::uint64_t points_written() const { return points_written_; }

 private:
  // The json text of the last timestamps written: series written by the same agent share their
  // timestamps, and formatting them is a large part of a json export.
  struct TimestampText {
    std::vector<std::int64_t> ts;
    std::shared_ptr<const std::string> text;  // shared with the process-wide cache
  };
  // Formats one series (json or csv) with `reader`; const so two series can be formatted at once.
  Status WriteTextSeries(SeriesReader& reader, TimestampText& ts_text, const SeriesInfo& info,
                         std::string* out, std::uint64_t* points) const;
  // Text formats: formats the next two series at once, the second on a helper thread with its
  // own reader, and appends both in order.
  Status WriteTextPair(std::string* out);
  // Writes binary frames of the current series until the piece is full; sets series_done_.
  Status WriteBinarySeries(const SeriesInfo& info, std::string* out);
  Status AppendBinaryChunk(const ChunkView& view, std::string* out);
  void WriteError(const Status& st, std::string* out);

  Storage& storage_;
  const std::vector<SeriesRef> series_;
  const std::int64_t start_ns_;
  const std::int64_t end_ns_;
  const ExportFormat format_;
  SeriesReader reader_;
  std::unique_ptr<SeriesReader> side_reader_;  // the helper thread's, created on first use
  std::string metric_json_;                     // the binary format's series frame, reused
  std::string side_out_;
  TimestampText ts_text_;       // this thread's
  TimestampText side_ts_text_;  // the helper thread's

  bool started_ = false;
  bool finished_ = false;
  std::size_t next_series_ = 0;
  std::uint32_t series_written_ = 0;
  std::uint64_t points_written_ = 0;

  // Binary: the series being written may span pieces.
  bool in_series_ = false;
  std::int64_t cursor_ns_ = 0;      // next chunk point to write
  std::int64_t chunk_end_ns_ = 0;   // chunks hold points up to here (older than the head)
  bool chunks_left_ = false;
  std::vector<std::int64_t> head_ts_;
  std::vector<double> head_values_;
  std::vector<std::int64_t> scratch_ts_;
  std::vector<double> scratch_values_;
};

}  // namespace ingot
