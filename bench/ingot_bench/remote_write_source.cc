#include "bench/ingot_bench/remote_write_source.h"

#include <snappy.h>

#include <algorithm>
#include <cassert>
#include <charconv>

#include "bench/ingot_bench/byte_buffer.h"
#include "ingest/proto/remote.pb.h"

namespace ingot::bench {
namespace {

constexpr int64_t kNanosPerMilli = 1'000'000;

// One host slot of a block: its label sets (one per field) and its rows.
struct Slot {
  std::vector<std::vector<std::pair<std::string, std::string>>> labels;  // per field, sorted
  std::vector<int64_t> ts_ms;
  std::vector<double> values;  // row-major: row * fields + field
};

}  // namespace

bool ParseCpuLine(std::string_view line, std::vector<std::pair<std::string, std::string>>* tags,
                  std::vector<std::pair<std::string, double>>* fields, int64_t* ts_ns) {
  tags->clear();
  fields->clear();
  const size_t series_end = line.find(' ');
  if (series_end == std::string_view::npos) return false;
  const size_t fields_end = line.find(' ', series_end + 1);
  if (fields_end == std::string_view::npos) return false;
  // The generator writes no escapes: tags are plain `k=v` pairs after the measurement.
  std::string_view series = line.substr(0, series_end);
  size_t comma = series.find(',');
  while (comma != std::string_view::npos) {
    series.remove_prefix(comma + 1);
    comma = series.find(',');
    const std::string_view tag = series.substr(0, comma);
    const size_t eq = tag.find('=');
    if (eq == std::string_view::npos) return false;
    tags->emplace_back(std::string(tag.substr(0, eq)), std::string(tag.substr(eq + 1)));
  }
  std::sort(tags->begin(), tags->end());
  std::string_view rest = line.substr(series_end + 1, fields_end - series_end - 1);
  while (!rest.empty()) {
    const size_t next = rest.find(',');
    const std::string_view field = rest.substr(0, next);
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) return false;
    double v = 0;
    const std::string_view text = field.substr(eq + 1);
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return false;
    fields->emplace_back(std::string(field.substr(0, eq)), v);
  }
  const std::string_view ts = line.substr(fields_end + 1);
  const auto r = std::from_chars(ts.data(), ts.data() + ts.size(), *ts_ns);
  return r.ec == std::errc() && r.ptr == ts.data() + ts.size();
}

RemoteWriteSource::RemoteWriteSource(const CpuWorkloadOptions& options, uint32_t host_begin,
                                     uint32_t host_end, uint32_t series_per_request,
                                     uint32_t samples_per_series) {
  assert(options.total_lines != kUnboundedLines && options.new_series_ratio == 0);
  CpuWorkload workload(options, host_begin, host_end);
  const size_t hosts = host_end - host_begin;
  const size_t fields = options.fields;
  const size_t hosts_per_request = std::max<size_t>(1, series_per_request / fields);
  const size_t block_lines = hosts * samples_per_series;
  std::vector<Slot> slots(hosts);
  ByteBuffer text;
  std::vector<std::pair<std::string, std::string>> tags;
  std::vector<std::pair<std::string, double>> parsed;
  std::string raw;
  while (workload.lines_left() > 0) {
    // A block: samples_per_series rows of every host, in the generator's order (row, then host).
    text.Clear();
    size_t lines = 0;
    while (lines < block_lines) {
      const size_t n = workload.Generate(block_lines - lines, text);
      if (n == 0) break;
      lines += n;
    }
    if (lines == 0) break;
    for (Slot& slot : slots) {
      slot.ts_ms.clear();
      slot.values.clear();
    }
    std::string_view rest = text.view();
    for (size_t i = 0; i < lines; ++i) {
      const size_t end = rest.find('\n');
      const std::string_view line = rest.substr(0, end);
      rest.remove_prefix(end + 1);
      int64_t ts_ns = 0;
      const bool ok = ParseCpuLine(line, &tags, &parsed, &ts_ns);
      assert(ok && parsed.size() == fields);
      (void)ok;
      Slot& slot = slots[i % hosts];
      if (slot.labels.empty()) {
        for (const auto& [name, value] : parsed) {
          (void)value;
          auto labels = tags;
          labels.emplace_back("__name__", "cpu_" + name);
          std::sort(labels.begin(), labels.end());
          slot.labels.push_back(std::move(labels));
        }
      }
      slot.ts_ms.push_back(ts_ns / kNanosPerMilli);
      for (const auto& [name, value] : parsed) slot.values.push_back(value);
    }
    for (size_t first = 0; first < hosts; first += hosts_per_request) {
      prometheus::WriteRequest request;
      Request encoded;
      for (size_t h = first; h < std::min(hosts, first + hosts_per_request); ++h) {
        const Slot& slot = slots[h];
        encoded.lines += slot.ts_ms.size();
        for (size_t f = 0; f < slot.labels.size() && !slot.ts_ms.empty(); ++f) {
          prometheus::TimeSeries* series = request.add_timeseries();
          for (const auto& [name, value] : slot.labels[f]) {
            prometheus::Label* label = series->add_labels();
            label->set_name(name);
            label->set_value(value);
          }
          for (size_t row = 0; row < slot.ts_ms.size(); ++row) {
            prometheus::Sample* sample = series->add_samples();
            sample->set_timestamp(slot.ts_ms[row]);
            sample->set_value(slot.values[row * fields + f]);
          }
          encoded.samples += slot.ts_ms.size();
        }
      }
      if (encoded.samples == 0) continue;
      raw.clear();
      request.SerializeToString(&raw);
      snappy::Compress(raw.data(), raw.size(), &encoded.body);
      encoded_bytes_ += encoded.body.size();
      requests_.push_back(std::move(encoded));
    }
  }
}

bool RemoteWriteSource::Next(Batch* batch) {
  if (stopped_.load(std::memory_order_relaxed) || next_ == requests_.size()) return false;
  const Request& r = requests_[next_++];
  batch->bytes = r.body;
  batch->lines = r.lines;
  batch->values = r.samples;
  batch->new_series = 0;
  return true;
}

}  // namespace ingot::bench
