// lp-parser-bench: single-core throughput of the line-protocol parser.
//
// Generates TSBS-like "cpu-only" line protocol in memory (measurement cpu, 10 tags, 10 float
// fields usage_user..usage_guest_nice as bounded random walks with 2 decimals, ns timestamps,
// one line per host every 10 s), then splits and parses it on one core several times and prints
// MB/s, lines/s and values/s of the best pass. The parsed values are summed and checked against
// the generator's own sum so the work cannot be optimized away and the parse is verified.
//
//   lp-parser-bench [--mb N] [--hosts N] [--passes N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/line_parser.h"

namespace {

using ingot::ingest::FieldType;
using ingot::ingest::LineParser;
using ingot::ingest::NextLine;
using ingot::ingest::ParsedLine;
using ingot::ingest::ParseError;
using ingot::ingest::ParseResult;
using ingot::ingest::Precision;

constexpr const char* kFieldNames[] = {
    "usage_user",   "usage_system", "usage_idle",  "usage_nice",  "usage_iowait",
    "usage_irq",    "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"};
constexpr int kFields = 10;

struct Corpus {
  std::string text;
  std::uint64_t lines = 0;
  std::int64_t value_sum_cents = 0;  // sum of all values * 100, to verify the parse
};

Corpus Generate(std::size_t target_bytes, int hosts) {
  static constexpr const char* kRegions[] = {"us-east-1", "us-west-1", "us-west-2", "eu-west-1",
                                             "eu-central-1", "ap-southeast-1", "ap-southeast-2",
                                             "ap-northeast-1", "sa-east-1"};
  static constexpr const char* kOs[] = {"Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"};
  static constexpr const char* kArch[] = {"x64", "x86"};
  static constexpr const char* kTeam[] = {"SF", "NYC", "LON", "CHI"};
  static constexpr const char* kEnv[] = {"production", "staging", "test"};
  std::mt19937_64 rng(42);
  std::vector<std::string> prefixes;
  for (int h = 0; h < hosts; ++h) {
    const char* region = kRegions[rng() % 9];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "cpu,hostname=host_%d,region=%s,datacenter=%s%c,rack=%d,os=%s,arch=%s,team=%s,"
                  "service=%d,service_version=%d,service_environment=%s",
                  h, region, region, static_cast<char>('a' + rng() % 3),
                  static_cast<int>(rng() % 100), kOs[rng() % 3], kArch[rng() % 2],
                  kTeam[rng() % 4], static_cast<int>(rng() % 20), static_cast<int>(rng() % 2),
                  kEnv[rng() % 3]);
    prefixes.emplace_back(buf);
  }
  // Random walks in cents within [0, 100.00].
  std::vector<int> walk(static_cast<std::size_t>(hosts) * kFields);
  for (int& w : walk) w = static_cast<int>(rng() % 10001);
  Corpus c;
  c.text.reserve(target_bytes + 1024);
  std::int64_t ts_ns = 1'451'606'400'000'000'000;  // 2016-01-01
  char line[1024];
  while (c.text.size() < target_bytes) {
    for (int h = 0; h < hosts && c.text.size() < target_bytes; ++h) {
      std::size_t n = prefixes[static_cast<std::size_t>(h)].size();
      std::memcpy(line, prefixes[static_cast<std::size_t>(h)].data(), n);
      for (int f = 0; f < kFields; ++f) {
        int& w = walk[static_cast<std::size_t>(h) * kFields + static_cast<std::size_t>(f)];
        w = std::clamp(w + static_cast<int>(rng() % 201) - 100, 0, 10000);
        c.value_sum_cents += w;
        n += static_cast<std::size_t>(std::snprintf(line + n, sizeof line - n, "%c%s=%d.%02d",
                                                    f == 0 ? ' ' : ',', kFieldNames[f], w / 100,
                                                    w % 100));
      }
      n += static_cast<std::size_t>(
          std::snprintf(line + n, sizeof line - n, " %lld\n", static_cast<long long>(ts_ns)));
      c.text.append(line, n);
      ++c.lines;
    }
    ts_ns += 10'000'000'000;
  }
  return c;
}

struct PassResult {
  double seconds = 0;
  std::uint64_t lines = 0;
  std::uint64_t values = 0;
  double value_sum = 0;
  std::uint64_t errors = 0;
};

PassResult ParseAll(const std::string& text) {
  LineParser parser(Precision::kNanoseconds);
  PassResult r;
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t pos = 0;
  std::string_view line;
  ParsedLine point;
  ParseError error;
  while (NextLine(text, &pos, &line, /*end_of_input=*/true)) {
    if (parser.Parse(line, 0, &point, &error) != ParseResult::kPoint) {
      ++r.errors;
      continue;
    }
    ++r.lines;
    for (const auto& f : point.fields) {
      if (f.type == FieldType::kFloat) r.value_sum += f.float_value;
    }
    r.values += point.fields.size();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mb = 100;
  int hosts = 100;
  int passes = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view a = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (a == "--mb") {
      mb = static_cast<std::size_t>(std::max(1L, v));
    } else if (a == "--hosts") {
      hosts = static_cast<int>(std::max(1L, v));
    } else if (a == "--passes") {
      passes = static_cast<int>(std::max(1L, v));
    } else {
      std::fprintf(stderr, "usage: lp-parser-bench [--mb N] [--hosts N] [--passes N]\n");
      return 2;
    }
  }
  const Corpus corpus = Generate(mb << 20, hosts);
  std::printf("corpus: %.1f MB, %llu lines, %d hosts, avg %.0f bytes/line\n",
              static_cast<double>(corpus.text.size()) / 1e6,
              static_cast<unsigned long long>(corpus.lines), hosts,
              static_cast<double>(corpus.text.size()) / static_cast<double>(corpus.lines));
  PassResult best;
  best.seconds = 1e300;
  for (int p = 0; p < passes; ++p) {
    const PassResult r = ParseAll(corpus.text);
    const double want = static_cast<double>(corpus.value_sum_cents) / 100.0;
    if (r.errors != 0 || r.lines != corpus.lines ||
        std::fabs(r.value_sum - want) > 1e-6 * std::max(1.0, want)) {
      std::fprintf(stderr, "verification failed: %llu errors, %llu lines, sum %.2f want %.2f\n",
                   static_cast<unsigned long long>(r.errors),
                   static_cast<unsigned long long>(r.lines), r.value_sum, want);
      return 1;
    }
    std::printf("pass %d: %.3f s\n", p + 1, r.seconds);
    if (r.seconds < best.seconds) best = r;
  }
  const double mb_s = static_cast<double>(corpus.text.size()) / 1e6 / best.seconds;
  std::printf("%-12s %10s %14s %14s %10s\n", "case", "MB/s", "lines/s", "values/s", "ns/value");
  std::printf("%-12s %10.1f %14.0f %14.0f %10.2f\n", "tsbs-cpu", mb_s,
              static_cast<double>(best.lines) / best.seconds,
              static_cast<double>(best.values) / best.seconds,
              best.seconds * 1e9 / static_cast<double>(best.values));
  return 0;
}
