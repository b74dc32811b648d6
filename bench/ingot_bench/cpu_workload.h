// CpuWorkload: the TSBS-style "cpu-only" line-protocol generator.
//
// Every host has 10 tags (hostname=host_<i>, region, datacenter, rack, os, arch, team,
// service, service_version, service_environment) and emits one `cpu` line per interval with
// 10 fields (usage_user ... usage_guest_nice). Each field is a bounded random walk in [0, 100]
// with steps in [-1, 1], printed with exactly `decimals` digits after the point. Lines are
// ordered by time, then by host: the row at start_ns holds host_0..host_<hosts-1>, the next row
// is one interval later.
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

inline constexpr size_t kCpuFieldsPerLine = 10;
inline constexpr std::array<std::string_view, kCpuFieldsPerLine> kCpuFieldNames = {
    "usage_user",   "usage_system", "usage_idle",    "usage_nice",  "usage_iowait",
    "usage_irq",    "usage_softirq", "usage_steal",  "usage_guest", "usage_guest_nice"};
inline constexpr int kCpuMaxDecimals = 6;
inline constexpr uint64_t kUnboundedLines = std::numeric_limits<uint64_t>::max();
// 2024-01-01T00:00:00Z: fixed so that a run is reproducible without flags.
inline constexpr int64_t kDefaultStartNs = 1'704'067'200'000'000'000;

struct CpuWorkloadOptions {
  uint32_t hosts = 100;
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
  //           interval_ns > 0.
  CpuWorkload(const CpuWorkloadOptions& options, uint32_t host_begin, uint32_t host_end);

  // Appends up to `max_lines` complete lines to `out` and returns how many; 0 once all are out.
  size_t Generate(size_t max_lines, ByteBuffer& out);

  uint64_t lines_left() const { return lines_left_; }
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
    uint64_t rng;
    std::array<int32_t, kCpuFieldsPerLine> value_units;
  };

  template <int kDecimals>
  size_t GenerateImpl(size_t max_lines, ByteBuffer& out);
  void FormatTimestamp();

  CpuWorkloadOptions options_;
  std::vector<Host> hosts_;
  uint64_t lines_left_;
  uint64_t row_ = 0;
  size_t next_host_ = 0;  // index into hosts_ within the current row
  char ts_text_[24];      // " <ts_ns>\n" of the current row
  size_t ts_len_ = 0;
  size_t max_line_bytes_ = 0;
};

}  // namespace ingot::bench
