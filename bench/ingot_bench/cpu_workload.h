// CpuWorkload: the TSBS-style "cpu-only" line-protocol generator.
//
// Every host has 10 tags (hostname=host_<i>, region, datacenter, rack, os, arch, team,
// service, service_version, service_environment) and emits one `cpu` line per interval with
// `fields` fields (the first of usage_user ... usage_guest_nice). Each field is a bounded random
// walk in [0, 100] with steps in [-1, 1], printed with exactly `decimals` digits after the point.
// Lines are ordered by time, then by host: the row at start_ns holds host_0..host_<hosts-1>, the
// next row is one interval later.
//
// High cardinality: with new_series_ratio R > 0, a share R of the lines goes to a host never sent
// before instead: the line in row r at host slot i is written for hostname=n<r * hosts + i> (zero
// padded to 10 digits), with slot i's values and timestamp. The name is the line's number in the
// whole workload, so it is unique across connections and rows. Its other tags are those host_<i>
// has under the default seed, whatever the seed: so another run with ratio 1, as many lines and any
// seed sends new values to the same series (their next points, given a later start_ns). Which
// lines go to new hosts is a hash of (seed, line number), so that choice too is independent of how
// the hosts are split.
//
// A host's tags and values depend only on (seed, host index), so splitting the hosts among several
// generators (one per connection) yields, per host, the same bytes as one generator for all hosts.
// Values are kept as integers in units of 10^-decimals, so formatting never touches floating point.
//
// Thread safety: none; one generator per thread.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "bench/ingot_bench/byte_buffer.h"

namespace ingot::bench {

// The most fields a line carries (and the default): CpuWorkloadOptions::fields picks a prefix.
inline constexpr size_t kCpuFieldsPerLine = 10;
inline constexpr uint32_t kCpuExtraTags = 9;  // tags after hostname: region ... service_environment
inline constexpr std::array<std::string_view, kCpuFieldsPerLine> kCpuFieldNames = {
    "usage_user",   "usage_system", "usage_idle",    "usage_nice",  "usage_iowait",
    "usage_irq",    "usage_softirq", "usage_steal",  "usage_guest", "usage_guest_nice"};
inline constexpr int kCpuMaxDecimals = 6;
inline constexpr uint64_t kUnboundedLines = std::numeric_limits<uint64_t>::max();
// 2024-01-01T00:00:00Z: fixed so that a run is reproducible without flags.
inline constexpr int64_t kDefaultStartNs = 1'704'067'200'000'000'000;

struct CpuWorkloadOptions {
  uint32_t hosts = 100;
  uint32_t fields = kCpuFieldsPerLine;  // 1..kCpuFieldsPerLine: the first names of kCpuFieldNames
  uint32_t tags = kCpuExtraTags;        // 0..kCpuExtraTags tags after hostname (region, ...)
  double new_series_ratio = 0;          // 0..1: share of lines sent for a never-sent host
  int64_t interval_ns = 10'000'000'000;
  int decimals = 2;  // 0..kCpuMaxDecimals
  uint64_t seed = 1;
  int64_t start_ns = kDefaultStartNs;
  uint64_t total_lines = kUnboundedLines;  // over all hosts
};

class CpuWorkload {
 public:
  // Generates the lines of hosts [host_begin, host_end) out of options.total_lines.
  // REQUIRES: host_begin < host_end <= options.hosts, 0 <= decimals <= kCpuMaxDecimals,
  //           interval_ns > 0, 1 <= fields <= kCpuFieldsPerLine, 0 <= new_series_ratio <= 1.
  CpuWorkload(const CpuWorkloadOptions& options, uint32_t host_begin, uint32_t host_end);

  // Appends up to `max_lines` complete lines to `out` and returns how many; 0 once all are out.
  // Allocates nothing once `out` has grown to a batch.
  size_t Generate(size_t max_lines, ByteBuffer& out);

  uint64_t lines_left() const { return lines_left_; }
  // Lines generated so far for never-sent hosts; each of them starts `fields` new series.
  uint64_t new_series_lines() const { return new_series_lines_; }
  // An upper bound on the bytes of one line.
  size_t max_line_bytes() const { return max_line_bytes_; }

  // The number of lines among `total_lines` that belong to hosts [host_begin, host_end).
  static uint64_t LinesForHosts(uint64_t total_lines, uint32_t hosts, uint32_t host_begin,
                                uint32_t host_end);
  // Timestamp of the last line when `total_lines` lines are generated for all hosts.
  // REQUIRES: 0 < total_lines < kUnboundedLines.
  static int64_t LastTimestampNs(const CpuWorkloadOptions& options, uint64_t total_lines);

 private:
  struct Host {
    std::string prefix;  // "cpu,hostname=...,service_environment=... "
    std::string new_host_tags;  // ",region=... " of the new hosts in this slot
    uint64_t rng;
    std::array<int32_t, kCpuFieldsPerLine> value_units;
  };

  template <int kDecimals>
  size_t GenerateImpl(size_t max_lines, ByteBuffer& out);
  void FormatTimestamp();
  bool IsNewSeriesLine(uint64_t line_index) const;

  CpuWorkloadOptions options_;
  uint32_t host_begin_;
  std::vector<Host> hosts_;
  // A line is new when the hash of its position is below the threshold (all are when the ratio is 1).
  uint64_t new_series_key_;
  uint64_t new_series_threshold_ = 0;
  bool every_line_new_ = false;
  uint64_t new_series_lines_ = 0;
  uint64_t lines_left_;
  uint64_t row_ = 0;
  size_t next_host_ = 0;  // index into hosts_ within the current row
  char ts_text_[24];      // " <ts_ns>\n" of the current row
  size_t ts_len_ = 0;
  size_t max_line_bytes_ = 0;
};

}  // namespace ingot::bench
