// RemoteWriteSource: the cpu workload (bench/ingot_bench/cpu_workload.h) as Prometheus remote-write
// requests, so that the same samples the line-protocol formats send can be sent to any
// remote-write receiver (Ingot's and VictoriaMetrics' /api/v1/write).
//
// Each line-protocol line `cpu,hostname=h,... usage_user=1.5,... <ts>` becomes one sample of each
// of its series `cpu_usage_user{hostname="h",...}` (the series model both servers give line
// protocol), at the line's time in milliseconds, with the value the line's text parses to. A
// request carries `series_per_request` series (whole hosts: series_per_request / fields of them,
// at least one) with `samples_per_series` consecutive samples each, as a Prometheus server's
// queue shards batch them; its body is the snappy block of the protobuf WriteRequest, encoded
// with the reference protobuf classes.
//
// Every request is encoded when the source is made, before the run's clock starts, so the
// measurement sees sending and the server only; memory is the compressed bodies (a few bytes per
// sample).
//
// Thread safety: as BatchSource (one consumer).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/ingot_bench/batch_source.h"
#include "bench/ingot_bench/cpu_workload.h"
#include "config/status.h"

namespace ingot::bench {

class RemoteWriteSource final : public BatchSource {
 public:
  // Encodes the lines of hosts [host_begin, host_end) out of options.total_lines.
  // REQUIRES: as CpuWorkload's; options.total_lines bounded; new_series_ratio == 0;
  //           series_per_request > 0; samples_per_series > 0.
  RemoteWriteSource(const CpuWorkloadOptions& options, uint32_t host_begin, uint32_t host_end,
                    uint32_t series_per_request, uint32_t samples_per_series);

  bool Next(Batch* batch) override;
  void Stop() override { stopped_.store(true, std::memory_order_relaxed); }

  // Bytes of all encoded bodies.
  uint64_t encoded_bytes() const { return encoded_bytes_; }

 private:
  struct Request {
    std::string body;
    uint64_t lines = 0;
    uint64_t samples = 0;
  };
  std::vector<Request> requests_;
  size_t next_ = 0;
  uint64_t encoded_bytes_ = 0;
  std::atomic<bool> stopped_{false};
};

// Parses one generated line (without its newline) into its label set (`__name__` left out, sorted
// by name), values and timestamp. False when the line is not in the generator's form.
bool ParseCpuLine(std::string_view line, std::vector<std::pair<std::string, std::string>>* tags,
                  std::vector<std::pair<std::string, double>>* fields, int64_t* ts_ns);

}  // namespace ingot::bench
