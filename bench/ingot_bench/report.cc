#include "bench/ingot_bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace ingot::bench {
namespace {

// Keys in the order they are set, so the JSON reads like the text report.
using Json = nlohmann::ordered_json;

std::string Printf(const char* format, auto... args) {
  char text[512];
  std::snprintf(text, sizeof(text), format, args...);
  return text;
}

// JSON has no NaN or infinity; a rate over zero seconds is reported as null.
Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json ErrorsJson(const std::map<std::string, uint64_t>& errors) {
  Json out = Json::object();
  for (const auto& [kind, count] : errors) out[kind] = count;
  return out;
}

Json LatencyJson(const LogLinearHistogram& h) {
  return Json{{"count", h.count()},          {"mean", Number(h.mean())},
              {"min", h.min()},              {"p50", h.Percentile(0.5)},
              {"p90", h.Percentile(0.9)},    {"p99", h.Percentile(0.99)},
              {"p999", h.Percentile(0.999)}, {"max", h.max()}};
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

Json VerifyJson(const VerifyReport& v) {
  if (!v.requested) return nullptr;
  return Json{{"complete", v.complete},
              {"expected_values", v.expected_values},
              {"counted_values", v.counted_values},
              {"queryable_after_s", Number(v.queryable_after_s)},
              {"values_per_s",
               Number(v.complete && v.queryable_after_s > 0
                          ? static_cast<double>(v.expected_values) / v.queryable_after_s
                          : 0)},
              {"polls", v.polls},
              {"last_error", v.last_error}};
}

Json IngestJson(const IngestReport& r) {
  Json out;
  out["target"] = r.target;
  out["connections"] = r.connections;
  out["send_seconds"] = Number(r.send_seconds);
  out["bytes"] = r.bytes;
  out["lines"] = r.lines;
  out["values"] = r.values;
  out["new_series"] = r.new_series;
  out["batches"] = r.batches;
  out["values_per_s"] = {{"mean", Number(r.mean_values_per_s())},
                         {"p50", Number(SamplePercentile(r.per_second_values, 0.5))},
                         {"p99", Number(SamplePercentile(r.per_second_values, 0.99))}};
  // "send": over the send time; "queryable": until the verification confirmed all (0 without).
  out["new_series_per_s"] = {{"send", Number(r.new_series_per_s())},
                             {"queryable", Number(r.queryable_new_series_per_s())}};
  Json per_second = Json::array();
  for (double v : r.per_second_values) per_second.push_back(Number(v));
  out["per_second_values"] = std::move(per_second);
  out["errors"] = ErrorsJson(r.errors);
  out["first_error"] = r.first_error;
  out["write_latency_us"] = r.has_write_latency ? LatencyJson(r.write_latency_us) : Json(nullptr);
  out["verify"] = VerifyJson(r.verify);
  return out;
}

// Reports carry server answers and file contents: invalid UTF-8 is replaced, never thrown on.
std::string Dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

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
  if (r.new_series > 0) {
    out += Printf("new series    %llu: %s series/s sent",
                  static_cast<unsigned long long>(r.new_series),
                  HumanCount(r.new_series_per_s()).c_str());
    if (r.verify.complete) {
      out += ", " + HumanCount(r.queryable_new_series_per_s()) + " series/s until queryable";
    }
    out += "\n";
  }
  return out;
}

std::string IngestReportJson(const IngestReport& r) { return Dump(IngestJson(r)); }

std::string FormatQueryReport(const std::vector<QueryWorkloadReport>& reports) {
  std::string out = Printf("%-13s %-46s %5s %8s %9s %10s %10s %10s %10s %7s\n", "", "query",
                           "conc", "queries", "q/s", "p50", "p90", "p99", "max", "errors");
  for (const QueryWorkloadReport& r : reports) {
    uint64_t errors = 0;
    for (const auto& [kind, count] : r.errors) errors += count;
    out += Printf("%-13s %-46s %5u %8llu %9.1f %10s %10s %10s %10s %7llu\n", r.name.c_str(),
                  r.description.c_str(), r.concurrency,
                  static_cast<unsigned long long>(r.queries), r.queries_per_s(),
                  Millis(r.latency_us.Percentile(0.5)).c_str(),
                  Millis(r.latency_us.Percentile(0.9)).c_str(),
                  Millis(r.latency_us.Percentile(0.99)).c_str(), Millis(r.latency_us.max()).c_str(),
                  static_cast<unsigned long long>(errors));
    if (!r.query.empty()) out += "              " + r.query + "\n";
    if (errors > 0) out += "              errors: " + ErrorsText(r.errors, r.first_error) + "\n";
  }
  return out;
}

std::string QueryReportJson(const std::vector<QueryWorkloadReport>& reports) {
  Json workloads = Json::array();
  for (const QueryWorkloadReport& r : reports) {
    workloads.push_back(Json{{"name", r.name},
                             {"description", r.description},
                             {"query", r.query},
                             {"request", r.request},
                             {"concurrency", r.concurrency},
                             {"seconds", Number(r.seconds)},
                             {"queries", r.queries},
                             {"queries_per_s", Number(r.queries_per_s())},
                             {"response_bytes", r.response_bytes},
                             {"errors", ErrorsJson(r.errors)},
                             {"first_error", r.first_error},
                             {"latency_us", LatencyJson(r.latency_us)}});
  }
  return Dump(Json{{"workloads", std::move(workloads)}});
}

std::string FormatCompareTable(const std::vector<IngestReport>& reports) {
  const bool new_series = std::any_of(reports.begin(), reports.end(),
                                      [](const IngestReport& r) { return r.new_series > 0; });
  std::string out = Printf("%-32s %12s %9s %14s %12s %16s %8s", "target", "values", "send s",
                           "send values/s", "queryable s", "queryable vals/s", "errors");
  if (new_series) out += Printf(" %11s %18s", "new series", "queryable series/s");
  out += "\n";
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
    out += Printf("%-32s %12llu %9.3f %14s %12s %16s %8llu", r.target.c_str(),
                  static_cast<unsigned long long>(r.values), r.send_seconds,
                  HumanCount(r.mean_values_per_s()).c_str(), queryable_s.c_str(),
                  queryable_rate.c_str(), static_cast<unsigned long long>(r.error_count()));
    if (new_series) {
      out += Printf(" %11llu %18s", static_cast<unsigned long long>(r.new_series),
                    r.verify.complete ? HumanCount(r.queryable_new_series_per_s()).c_str() : "-");
    }
    out += "\n";
  }
  return out;
}

std::string CompareReportJson(const std::vector<IngestReport>& reports) {
  Json runs = Json::array();
  for (const IngestReport& r : reports) runs.push_back(IngestJson(r));
  return Dump(Json{{"runs", std::move(runs)}});
}

}  // namespace ingot::bench
