#include "bench/ingot_bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "config/json_string.h"

namespace ingot::bench {
namespace {

std::string Printf(const char* format, auto... args) {
  char text[512];
  std::snprintf(text, sizeof(text), format, args...);
  return text;
}

std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return Printf("%.6g", v);
}

std::string ErrorsJson(const std::map<std::string, uint64_t>& errors) {
  std::string out = "{";
  for (const auto& [kind, count] : errors) {
    if (out.size() > 1) out += ",";
    out += JsonString(kind) + ":" + std::to_string(count);
  }
  return out + "}";
}

std::string LatencyJson(const LogLinearHistogram& h) {
  return "{\"count\":" + std::to_string(h.count()) + ",\"mean\":" + JsonNumber(h.mean()) +
         ",\"min\":" + std::to_string(h.min()) + ",\"p50\":" + std::to_string(h.Percentile(0.5)) +
         ",\"p99\":" + std::to_string(h.Percentile(0.99)) +
         ",\"p999\":" + std::to_string(h.Percentile(0.999)) +
         ",\"max\":" + std::to_string(h.max()) + "}";
}

std::string Millis(uint64_t us) { return Printf("%.2f ms", static_cast<double>(us) / 1000.0); }

std::string ErrorsText(const std::map<std::string, uint64_t>& errors, const std::string& first) {
  if (errors.empty()) return "none";
  std::string out;
  for (const auto& [kind, count] : errors) {
    if (!out.empty()) out += ", ";
    out += kind + " " + std::to_string(count);
  }
  if (!first.empty()) out += " (first: " + first + ")";
  return out;
}

std::string VerifyJson(const VerifyReport& v) {
  if (!v.requested) return "null";
  return "{\"complete\":" + std::string(v.complete ? "true" : "false") +
         ",\"expected_values\":" + std::to_string(v.expected_values) +
         ",\"counted_values\":" + std::to_string(v.counted_values) +
         ",\"queryable_after_s\":" + JsonNumber(v.queryable_after_s) +
         ",\"values_per_s\":" +
         JsonNumber(v.complete && v.queryable_after_s > 0
                        ? static_cast<double>(v.expected_values) / v.queryable_after_s
                        : 0) +
         ",\"polls\":" + std::to_string(v.polls) + ",\"last_error\":" + JsonString(v.last_error) +
         "}";
}

}  // namespace

uint64_t IngestReport::error_count() const {
  uint64_t n = 0;
  for (const auto& [kind, count] : errors) n += count;
  return n;
}

double SamplePercentile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double rank = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(samples.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return samples[std::min(index, samples.size() - 1)];
}

std::string HumanCount(double value) {
  if (value >= 1e9) return Printf("%.2fG", value / 1e9);
  if (value >= 1e6) return Printf("%.2fM", value / 1e6);
  if (value >= 1e4) return Printf("%.1fk", value / 1e3);
  return Printf("%.0f", value);
}

std::string FormatIngestReport(const IngestReport& r) {
  std::string out;
  out += "target        " + r.target + " (" + std::to_string(r.connections) + " connection" +
         (r.connections == 1 ? "" : "s") + ")\n";
  out += Printf("sent          %llu values, %llu lines, %llu batches, %.1f MB in %.3f s\n",
                static_cast<unsigned long long>(r.values),
                static_cast<unsigned long long>(r.lines),
                static_cast<unsigned long long>(r.batches), r.bytes / 1e6, r.send_seconds);
  out += Printf("throughput    mean %s values/s (%.1f MB/s); per second p50 %s, p99 %s\n",
                HumanCount(r.mean_values_per_s()).c_str(),
                r.send_seconds > 0 ? r.bytes / 1e6 / r.send_seconds : 0.0,
                HumanCount(SamplePercentile(r.per_second_values, 0.5)).c_str(),
                HumanCount(SamplePercentile(r.per_second_values, 0.99)).c_str());
  out += "errors        " + ErrorsText(r.errors, r.first_error) + "\n";
  if (r.has_write_latency) {
    const LogLinearHistogram& h = r.write_latency_us;
    out += "write latency p50 " + Millis(h.Percentile(0.5)) + ", p99 " +
           Millis(h.Percentile(0.99)) + ", p999 " + Millis(h.Percentile(0.999)) + ", max " +
           Millis(h.max()) + " (" + std::to_string(h.count()) + " requests)\n";
  }
  if (r.verify.requested) {
    const VerifyReport& v = r.verify;
    if (v.complete) {
      out += Printf("queryable     all %llu values after %.3f s (%s values/s end to end, %u polls)",
                    static_cast<unsigned long long>(v.expected_values), v.queryable_after_s,
                    HumanCount(v.expected_values / v.queryable_after_s).c_str(), v.polls);
      if (v.counted_values != v.expected_values) {
        out += Printf("; the server counts %llu: data from an earlier run?",
                      static_cast<unsigned long long>(v.counted_values));
      }
      out += "\n";
    } else {
      out += Printf("queryable     INCOMPLETE: %llu of %llu values after %.3f s",
                    static_cast<unsigned long long>(v.counted_values),
                    static_cast<unsigned long long>(v.expected_values), v.queryable_after_s);
      if (!v.last_error.empty()) out += " (last error: " + v.last_error + ")";
      out += "\n";
    }
  }
  return out;
}

std::string IngestReportJson(const IngestReport& r) {
  std::string out = "{";
  out += "\"target\":" + JsonString(r.target);
  out += ",\"connections\":" + std::to_string(r.connections);
  out += ",\"send_seconds\":" + JsonNumber(r.send_seconds);
  out += ",\"bytes\":" + std::to_string(r.bytes);
  out += ",\"lines\":" + std::to_string(r.lines);
  out += ",\"values\":" + std::to_string(r.values);
  out += ",\"batches\":" + std::to_string(r.batches);
  out += ",\"values_per_s\":{\"mean\":" + JsonNumber(r.mean_values_per_s()) +
         ",\"p50\":" + JsonNumber(SamplePercentile(r.per_second_values, 0.5)) +
         ",\"p99\":" + JsonNumber(SamplePercentile(r.per_second_values, 0.99)) + "}";
  out += ",\"per_second_values\":[";
  for (size_t i = 0; i < r.per_second_values.size(); ++i) {
    if (i > 0) out += ",";
    out += JsonNumber(r.per_second_values[i]);
  }
  out += "]";
  out += ",\"errors\":" + ErrorsJson(r.errors);
  out += ",\"first_error\":" + JsonString(r.first_error);
  out += ",\"write_latency_us\":" +
         (r.has_write_latency ? LatencyJson(r.write_latency_us) : std::string("null"));
  out += ",\"verify\":" + VerifyJson(r.verify);
  return out + "}";
}

std::string FormatQueryReport(const std::vector<QueryWorkloadReport>& reports) {
  std::string out = Printf("%-4s %-44s %5s %8s %9s %10s %10s %10s %7s\n", "", "query", "conc",
                           "queries", "q/s", "p50", "p99", "max", "errors");
  for (const QueryWorkloadReport& r : reports) {
    uint64_t errors = 0;
    for (const auto& [kind, count] : r.errors) errors += count;
    out += Printf("%-4s %-44s %5u %8llu %9.1f %10s %10s %10s %7llu\n", r.name.c_str(),
                  r.description.c_str(), r.concurrency,
                  static_cast<unsigned long long>(r.queries), r.queries_per_s(),
                  Millis(r.latency_us.Percentile(0.5)).c_str(),
                  Millis(r.latency_us.Percentile(0.99)).c_str(), Millis(r.latency_us.max()).c_str(),
                  static_cast<unsigned long long>(errors));
    if (errors > 0) out += "     errors: " + ErrorsText(r.errors, r.first_error) + "\n";
  }
  return out;
}

std::string QueryReportJson(const std::vector<QueryWorkloadReport>& reports) {
  std::string out = "{\"workloads\":[";
  for (size_t i = 0; i < reports.size(); ++i) {
    const QueryWorkloadReport& r = reports[i];
    if (i > 0) out += ",";
    out += "{\"name\":" + JsonString(r.name) + ",\"description\":" + JsonString(r.description) +
           ",\"concurrency\":" + std::to_string(r.concurrency) +
           ",\"seconds\":" + JsonNumber(r.seconds) + ",\"queries\":" + std::to_string(r.queries) +
           ",\"queries_per_s\":" + JsonNumber(r.queries_per_s()) +
           ",\"response_bytes\":" + std::to_string(r.response_bytes) +
           ",\"errors\":" + ErrorsJson(r.errors) + ",\"first_error\":" + JsonString(r.first_error) +
           ",\"latency_us\":" + LatencyJson(r.latency_us) + "}";
  }
  return out + "]}";
}

std::string FormatCompareTable(const std::vector<IngestReport>& reports) {
  std::string out = Printf("%-32s %12s %9s %14s %12s %16s %8s\n", "target", "values", "send s",
                           "send values/s", "queryable s", "queryable vals/s", "errors");
  for (const IngestReport& r : reports) {
    std::string queryable_s = "-";
    std::string queryable_rate = "-";
    if (r.verify.requested) {
      if (r.verify.complete) {
        queryable_s = Printf("%.3f", r.verify.queryable_after_s);
        queryable_rate = HumanCount(r.verify.expected_values / r.verify.queryable_after_s);
      } else {
        queryable_s = "incomplete";
      }
    }
    out += Printf("%-32s %12llu %9.3f %14s %12s %16s %8llu\n", r.target.c_str(),
                  static_cast<unsigned long long>(r.values), r.send_seconds,
                  HumanCount(r.mean_values_per_s()).c_str(), queryable_s.c_str(),
                  queryable_rate.c_str(), static_cast<unsigned long long>(r.error_count()));
  }
  return out;
}

std::string CompareReportJson(const std::vector<IngestReport>& reports) {
  std::string out = "{\"runs\":[";
  for (size_t i = 0; i < reports.size(); ++i) {
    if (i > 0) out += ",";
    out += IngestReportJson(reports[i]);
  }
  return out + "]}";
}

}  // namespace ingot::bench
