#include "bench/ingot_bench/verify.h"

#include <algorithm>
#include <charconv>
#include <thread>

#include "bench/ingot_bench/http_connection.h"

namespace ingot::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr Clock::duration kMinPollGap = std::chrono::milliseconds(10);
constexpr Clock::duration kMaxPollGap = std::chrono::milliseconds(100);

// Skips spaces, then expects `c`.
bool Expect(std::string_view json, size_t* pos, char c) {
  while (*pos < json.size() && (json[*pos] == ' ' || json[*pos] == '\n' || json[*pos] == '\t' ||
                                json[*pos] == '\r')) {
    ++*pos;
  }
  if (*pos >= json.size() || json[*pos] != c) return false;
  ++*pos;
  return true;
}

// Finds `"key"` followed by ':' at or after *pos.
bool FindKey(std::string_view json, size_t* pos, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  for (size_t at = json.find(quoted, *pos); at != std::string_view::npos;
       at = json.find(quoted, at + 1)) {
    size_t after = at + quoted.size();
    if (Expect(json, &after, ':')) {
      *pos = after;
      return true;
    }
  }
  return false;
}

// A client error other than a timeout or throttling does not go away by asking again: a selector
// matching more series than the server's limit (query.max_series in Ingot,
// -search.maxUniqueTimeseries in VictoriaMetrics) stays over it while series are added, and a bad
// URL stays bad. Waiting out --verify-timeout would only hide the answer.
bool IsRejection(unsigned status) {
  return status >= 400 && status < 500 && status != 408 && status != 429;
}

}  // namespace

std::string CountQueryTarget(std::string_view base_path, std::string_view selector,
                             int64_t first_ts_ns, int64_t last_ts_ns) {
  while (base_path.ends_with('/')) base_path.remove_suffix(1);
  // Evaluate 1 ms after the last sample; the range reaches 1 s before the first one.
  const int64_t eval_ns = last_ts_ns + 1'000'000;
  const int64_t range_s = (eval_ns - first_ts_ns) / 1'000'000'000 + 2;
  const std::string query = "sum(count_over_time(" + std::string(selector) + "[" +
                            std::to_string(range_s) + "s]))";
  return std::string(base_path) + "/api/v1/query?query=" + UrlEncode(query) +
         "&time=" + FormatSeconds(eval_ns) + "&nocache=1";
}

Status ParsePrometheusScalar(std::string_view json, double* value) {
  size_t pos = 0;
  if (!FindKey(json, &pos, "status")) return Status::Corruption("no \"status\" in answer");
  size_t status_pos = pos;
  if (!Expect(json, &status_pos, '"') || json.substr(status_pos, 8) != "success\"") {
    return Status::InvalidArgument("query failed: " + std::string(json.substr(0, 300)));
  }
  pos = 0;
  if (!FindKey(json, &pos, "result") || !Expect(json, &pos, '[')) {
    return Status::Corruption("no data.result array in answer");
  }
  size_t close = pos;
  if (Expect(json, &close, ']')) {
    *value = 0;
    return Status::OK();
  }
  if (!FindKey(json, &pos, "value") || !Expect(json, &pos, '[')) {
    return Status::Corruption("no result[0].value in answer");
  }
  // [<time>, "<value>"]
  const size_t comma = json.find(',', pos);
  if (comma == std::string_view::npos) return Status::Corruption("malformed value pair");
  pos = comma + 1;
  if (!Expect(json, &pos, '"')) return Status::Corruption("value is not a string");
  const size_t end = json.find('"', pos);
  if (end == std::string_view::npos) return Status::Corruption("unterminated value string");
  const auto [parsed_end, ec] = std::from_chars(json.data() + pos, json.data() + end, *value);
  if (ec != std::errc() || parsed_end != json.data() + end) {
    return Status::Corruption("value '" + std::string(json.substr(pos, end - pos)) +
                              "' is not a number");
  }
  return Status::OK();
}

void WaitUntilQueryable(const Target& url, const VerifyOptions& options,
                        Clock::time_point send_start, VerifyReport* report) {
  report->requested = true;
  report->expected_values = options.expected_values;
  const std::string target =
      CountQueryTarget(url.path, options.selector, options.first_ts_ns, options.last_ts_ns);
  const Clock::time_point deadline = Clock::now() + std::chrono::nanoseconds(options.timeout_ns);
  asio::io_context ioc;
  HttpConnection connection(ioc, url.host, url.port, options.request_timeout_ns);
  for (;;) {
    const Clock::time_point poll_start = Clock::now();
    bool done = false;
    bool rejected = false;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
          HttpConnection::Response response;
          const IoFailure failure =
              co_await connection.RoundTrip(http::verb::get, target, {}, {}, &response);
          ++report->polls;
          if (!failure.ok()) {
            report->last_error = failure.kind + ": " + failure.detail;
            co_return;
          }
          if (response.status != 200) {
            report->last_error =
                "http_" + std::to_string(response.status) + ": " + response.body.substr(0, 300);
            rejected = IsRejection(response.status);
            co_return;
          }
          double count = 0;
          const Status status = ParsePrometheusScalar(response.body, &count);
          if (!status.ok()) {
            report->last_error = status.ToString();
            co_return;
          }
          report->counted_values = static_cast<uint64_t>(count);
          if (report->counted_values >= options.expected_values) done = true;
        },
        asio::detached);
    ioc.restart();
    ioc.run();
    const Clock::time_point now = Clock::now();
    report->queryable_after_s = std::chrono::duration<double>(now - send_start).count();
    if (done) {
      report->complete = true;
      report->last_error.clear();
      return;
    }
    if (rejected || now >= deadline) return;
    // The pause between polls is as long as the last poll took, within [kMinPollGap, kMaxPollGap]:
    // short enough that the polling cadence is a small part of the reported time, long enough that
    // polling takes at most about half a core from a server that is still ingesting.
    std::this_thread::sleep_for(std::clamp<Clock::duration>(now - poll_start, kMinPollGap,
                                                            kMaxPollGap));
  }
}

}  // namespace ingot::bench
