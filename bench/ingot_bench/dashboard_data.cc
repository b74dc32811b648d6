#include "bench/ingot_bench/dashboard_data.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numbers>

#include <nlohmann/json.hpp>

namespace ingot::bench {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;
constexpr int64_t kNsPerS = 1'000'000'000;
constexpr int64_t kDayNs = 86'400 * kNsPerS;
constexpr std::array<double, 5> kCodeShare = {0.85, 0.08, 0.04, 0.02, 0.01};
constexpr std::array<double, 10> kBucketBounds = {0.005, 0.01, 0.025, 0.05, 0.1,
                                                  0.25,  0.5,  1,     2.5,  5};
static_assert(kBucketBounds.size() + 1 == kDashboardBuckets.size());
static_assert(kCodeShare.size() == kDashboardCodes.size());
constexpr size_t kFlushBytes = size_t{1} << 20;

// What a hash of (seed, a, b) decides, so that no draw depends on another.
enum Salt : uint64_t { kRate = 1, kStartValue, kNoise, kRestart, kMedian };

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1).
double Uniform(uint64_t seed, Salt salt, uint64_t a, uint64_t b = 0) {
  const uint64_t h = Mix(Mix(Mix(seed * 0xD1B54A32D192ED03ULL + salt) ^ a) ^ b);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

uint64_t RoundCount(double x) { return static_cast<uint64_t>(std::floor(x + 0.5)); }

std::string InstanceName(uint64_t k) {
  char text[32];
  std::snprintf(text, sizeof(text), "host-%04llu:9100", static_cast<unsigned long long>(k));
  return text;
}

std::string_view JobOf(uint64_t instance) {
  return kDashboardJobs[instance % kDashboardJobs.size()];
}

// label=value pairs, already in name order, as line-protocol tags or as a PromQL label set.
std::string Prefix(DashboardFormat format, std::string_view measurement, std::string_view field,
                   std::initializer_list<std::pair<std::string_view, std::string_view>> labels) {
  std::string out(measurement);
  if (format == DashboardFormat::kLineProtocol) {
    for (const auto& [name, value] : labels) {
      out.append(",").append(name).append("=").append(value);
    }
    return out.append(" ").append(field).append("=");
  }
  out.append("_").append(field).append("{");
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out.append(",");
    first = false;
    out.append(name).append("=\"").append(value).append("\"");
  }
  return out.append("} ");
}

}  // namespace

Status ParseDashboardFormat(std::string_view text, DashboardFormat* format) {
  if (text == "lp") {
    *format = DashboardFormat::kLineProtocol;
  } else if (text == "openmetrics") {
    *format = DashboardFormat::kOpenMetrics;
  } else if (text == "prometheus") {
    *format = DashboardFormat::kPrometheusText;
  } else {
    return Status::InvalidArgument("format '" + std::string(text) +
                                   "': expected lp, openmetrics or prometheus");
  }
  return Status::OK();
}

Status ValidateDashboardDataOptions(const DashboardDataOptions& o) {
  if (o.interval_ns <= 0 || o.interval_ns % kNsPerMs != 0) {
    return Status::InvalidArgument(
        "--interval must be a positive whole number of milliseconds, "
        "not " +
        std::to_string(o.interval_ns) + " ns");
  }
  if (o.start_ns % kNsPerMs != 0) {
    return Status::InvalidArgument("--start must be a whole millisecond, not " +
                                   std::to_string(o.start_ns) + " ns");
  }
  if (o.duration_ns < o.interval_ns) {
    return Status::InvalidArgument("--duration (" + std::to_string(o.duration_ns) +
                                   " ns) is shorter than one --interval");
  }
  if (o.counters == 0 && o.histogram_sets == 0) {
    return Status::InvalidArgument("--counters and --histograms are both 0: no series");
  }
  return Status::OK();
}

DashboardData::DashboardData(const DashboardDataOptions& options, DashboardFormat format)
    : options_(options),
      format_(format),
      rows_(static_cast<uint64_t>(options.duration_ns / options.interval_ns)) {
  const uint64_t seed = options_.seed;
  const uint32_t codes = kDashboardCodes.size();
  for (uint32_t i = 0; i < options_.counters; ++i) {
    const uint64_t instance = i / codes;
    counter_prefix_.push_back(Prefix(format_, "http_requests", "total",
                                     {{"code", kDashboardCodes[i % codes]},
                                      {"instance", InstanceName(instance)},
                                      {"job", JobOf(instance)}}));
    const double instance_rate = 5 + 45 * Uniform(seed, kRate, instance);
    counter_rate_per_s_.push_back(instance_rate * kCodeShare[i % codes]);
  }
  for (uint32_t j = 0; j < options_.histogram_sets; ++j) {
    for (std::string_view le : kDashboardBuckets) {
      bucket_prefix_.push_back(
          Prefix(format_, "http_request_duration_seconds", "bucket",
                 {{"instance", InstanceName(j)}, {"job", JobOf(j)}, {"le", le}}));
    }
    histogram_rate_per_s_.push_back(2 + 19 * Uniform(seed, kRate, j, 1));
    histogram_median_s_.push_back(0.02 * std::exp2(std::floor(5 * Uniform(seed, kMedian, j))));
  }
  // Row 0 starts from up to an hour of earlier traffic.
  counter_value_.resize(counter_prefix_.size());
  for (size_t i = 0; i < counter_value_.size(); ++i) {
    counter_value_[i] = RoundCount(counter_rate_per_s_[i] * 3600 * Uniform(seed, kStartValue, i));
  }
  bucket_value_.assign(bucket_prefix_.size(), 0);
}

void DashboardData::AppendHeader(ByteBuffer& out) const {
  if (format_ != DashboardFormat::kOpenMetrics) return;
  out.Append("# TYPE http_requests counter\n");
  out.Append("# TYPE http_request_duration_seconds histogram\n");
}

void DashboardData::AppendFooter(ByteBuffer& out) const {
  if (format_ == DashboardFormat::kOpenMetrics) out.Append("# EOF\n");
}

void DashboardData::AppendSample(ByteBuffer& out, const std::string& prefix, uint64_t value) const {
  char* p = out.Reserve(prefix.size() + 20 + ts_text_.size());
  char* const begin = p;
  std::memcpy(p, prefix.data(), prefix.size());
  p += prefix.size();
  p = std::to_chars(p, p + 20, value).ptr;
  std::memcpy(p, ts_text_.data(), ts_text_.size());
  p += ts_text_.size();
  out.Commit(static_cast<size_t>(p - begin));
}

bool DashboardData::AppendRow(ByteBuffer& out) {
  if (row_ >= rows_) return false;
  const uint64_t seed = options_.seed;
  const uint64_t row = row_++;
  const int64_t elapsed_ns = static_cast<int64_t>(row) * options_.interval_ns;
  const int64_t ts_ns = options_.start_ns + elapsed_ns;
  char text[32];
  switch (format_) {
    case DashboardFormat::kLineProtocol:
      std::snprintf(text, sizeof(text), " %lld\n", static_cast<long long>(ts_ns));
      break;
    case DashboardFormat::kPrometheusText:
      std::snprintf(text, sizeof(text), " %lld\n", static_cast<long long>(ts_ns / kNsPerMs));
      break;
    case DashboardFormat::kOpenMetrics: {
      // Seconds; whole ones as integers, else with millisecond decimals.
      const int64_t ms = ts_ns / kNsPerMs;
      if (ms % 1000 == 0) {
        std::snprintf(text, sizeof(text), " %lld\n", static_cast<long long>(ms / 1000));
      } else {
        std::snprintf(text, sizeof(text), " %.3f\n", static_cast<double>(ms) / 1000);
      }
      break;
    }
  }
  ts_text_ = text;

  const double interval_s = static_cast<double>(options_.interval_ns) / kNsPerS;
  // An instance restarts in a row with probability interval / 1 day.
  const double restart_p = static_cast<double>(options_.interval_ns) / kDayNs;
  auto restarted = [&](uint64_t instance) {
    return row > 0 && Uniform(seed, kRestart, instance, row) < restart_p;
  };

  const uint32_t codes = kDashboardCodes.size();
  for (size_t i = 0; i < counter_value_.size(); ++i) {
    if (row > 0) {
      const uint64_t increase =
          RoundCount(counter_rate_per_s_[i] * interval_s * (0.5 + Uniform(seed, kNoise, i, row)));
      if (restarted(i / codes)) counter_value_[i] = 0;
      counter_value_[i] += increase;
    }
    AppendSample(out, counter_prefix_[i], counter_value_[i]);
  }

  const double day_phase =
      2 * std::numbers::pi * static_cast<double>(elapsed_ns % kDayNs) / static_cast<double>(kDayNs);
  const size_t buckets = kDashboardBuckets.size();
  for (size_t j = 0; j < histogram_rate_per_s_.size(); ++j) {
    // Row 0 counts up to an hour of earlier observations, later rows one interval's.
    const double span_s = row == 0 ? 3600 * Uniform(seed, kStartValue, j, 1) : interval_s;
    const uint64_t observations =
        RoundCount(histogram_rate_per_s_[j] * span_s * (0.5 + Uniform(seed, kNoise, j, ~row)));
    const double median_s = histogram_median_s_[j] * (1 + 0.5 * std::sin(day_phase));
    uint64_t* const cumulative = &bucket_value_[j * buckets];
    if (restarted(j)) std::fill(cumulative, cumulative + buckets, 0);
    for (size_t b = 0; b < buckets; ++b) {
      // The share of observations at or below the bound: a log-logistic distribution around the
      // median. floor() of a share that grows with the bound keeps the buckets cumulative.
      uint64_t below = observations;
      if (b < kBucketBounds.size()) {
        const double ratio = median_s / kBucketBounds[b];
        below = static_cast<uint64_t>(
            std::floor(static_cast<double>(observations) / (1 + ratio * ratio)));
      }
      cumulative[b] += below;
      AppendSample(out, bucket_prefix_[j * buckets + b], cumulative[b]);
    }
  }
  return true;
}

Status WriteDashboardData(const DashboardDataOptions& options, DashboardFormat format,
                          const std::string& path, DashboardDataSummary* summary) {
  INGOT_RETURN_IF_ERROR(ValidateDashboardDataOptions(options));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned(nullptr, &std::fclose);
  std::FILE* file = stdout;
  if (path != "-") {
    owned.reset(std::fopen(path.c_str(), "wb"));
    if (!owned) return Status::IOError("cannot create " + path + ": " + std::strerror(errno));
    file = owned.get();
  }
  DashboardData data(options, format);
  ByteBuffer buffer;
  uint64_t bytes = 0;
  auto flush = [&]() -> Status {
    if (buffer.size() > 0 && std::fwrite(buffer.data(), 1, buffer.size(), file) != buffer.size()) {
      return Status::IOError("cannot write " + path + ": " + std::strerror(errno));
    }
    bytes += buffer.size();
    buffer.Clear();
    return Status::OK();
  };
  data.AppendHeader(buffer);
  while (data.AppendRow(buffer)) {
    if (buffer.size() >= kFlushBytes) INGOT_RETURN_IF_ERROR(flush());
  }
  data.AppendFooter(buffer);
  INGOT_RETURN_IF_ERROR(flush());
  if (std::fflush(file) != 0) {
    return Status::IOError("cannot write " + path + ": " + std::strerror(errno));
  }
  if (owned) {
    std::FILE* closing = owned.release();
    if (std::fclose(closing) != 0) {
      return Status::IOError("cannot close " + path + ": " + std::strerror(errno));
    }
  }
  summary->series = data.series();
  summary->samples = data.samples();
  summary->rows = data.rows();
  summary->bytes = bytes;
  summary->first_ts_ns = data.first_ts_ns();
  summary->last_ts_ns = data.last_ts_ns();
  return Status::OK();
}

std::string DashboardDataSummaryJson(const DashboardDataSummary& s) {
  return nlohmann::json{
      {"series", s.series}, {"samples", s.samples},         {"rows", s.rows},
      {"bytes", s.bytes},   {"first_ts_ns", s.first_ts_ns}, {"last_ts_ns", s.last_ts_ns}}
      .dump();
}

}  // namespace ingot::bench
