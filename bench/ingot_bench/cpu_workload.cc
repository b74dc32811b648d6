#include "bench/ingot_bench/cpu_workload.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <string>

namespace ingot::bench {
namespace {

constexpr std::array<std::string_view, 9> kRegions = {
    "us-east-1",      "us-west-1",      "us-west-2",      "eu-west-1", "eu-central-1",
    "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "sa-east-1"};
constexpr std::array<std::string_view, 3> kOperatingSystems = {"Ubuntu16.10", "Ubuntu16.04LTS",
                                                               "Ubuntu15.10"};
constexpr std::array<std::string_view, 2> kArchitectures = {"x64", "x86"};
constexpr std::array<std::string_view, 4> kTeams = {"SF", "NYC", "LON", "CHI"};
constexpr std::array<std::string_view, 3> kEnvironments = {"production", "staging", "test"};
constexpr uint32_t kRacks = 100;
constexpr uint32_t kServices = 20;
constexpr uint32_t kServiceVersions = 2;
constexpr uint32_t kDatacentersPerRegion = 3;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Uniform in [0, n) without division (Lemire's multiply-shift on the high 32 bits).
uint32_t Below(uint64_t random, uint32_t n) {
  return static_cast<uint32_t>(((random >> 32) * n) >> 32);
}

constexpr int32_t Pow10(int n) {
  int32_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

// Writes at least `min_digits` digits, zero padded.
char* WriteUnsigned(char* p, uint64_t v, int min_digits = 1) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (int pad = min_digits - n; pad > 0; --pad) *p++ = '0';
  while (n > 0) *p++ = digits[--n];
  return p;
}

// The generator of host `index`'s tags and values.
uint64_t HostRng(uint64_t seed, uint32_t index) {
  uint64_t rng = seed * 0xD1B54A32D192ED03ULL + index;
  SplitMix64(rng);
  return rng;
}

// Appends the first `tags` of ",region=...,service_environment=..." drawn from `rng`, then a
// space. Every tag is drawn whatever `tags`, so that fewer tags leave the values unchanged.
void AppendTags(uint64_t& rng, uint32_t tags, std::string* out) {
  const uint32_t region = Below(SplitMix64(rng), kRegions.size());
  const std::string drawn[kCpuExtraTags] = {
      std::string(kRegions[region]),
      std::string(kRegions[region]) +
          static_cast<char>('a' + Below(SplitMix64(rng), kDatacentersPerRegion)),
      std::to_string(Below(SplitMix64(rng), kRacks)),
      std::string(kOperatingSystems[Below(SplitMix64(rng), kOperatingSystems.size())]),
      std::string(kArchitectures[Below(SplitMix64(rng), kArchitectures.size())]),
      std::string(kTeams[Below(SplitMix64(rng), kTeams.size())]),
      std::to_string(Below(SplitMix64(rng), kServices)),
      std::to_string(Below(SplitMix64(rng), kServiceVersions)),
      std::string(kEnvironments[Below(SplitMix64(rng), kEnvironments.size())]),
  };
  static constexpr std::string_view kNames[kCpuExtraTags] = {
      "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version",
      "service_environment"};
  for (uint32_t t = 0; t < tags && t < kCpuExtraTags; ++t) {
    *out += ',';
    *out += kNames[t];
    *out += '=';
    *out += drawn[t];
  }
  *out += ' ';
}

constexpr std::string_view kNewHostPrefix = "cpu,hostname=n";
// New hosts take the tags their slot's host has under this seed (the default), whatever --seed.
constexpr uint64_t kNewHostTagsSeed = 1;
// Fixed width keeps the lines of a run equally long and the names sorted like their numbers.
constexpr int kNewHostDigits = 10;

}  // namespace

CpuWorkload::CpuWorkload(const CpuWorkloadOptions& options, uint32_t host_begin,
                         uint32_t host_end)
    : options_(options),
      host_begin_(host_begin),
      // Another stream than the hosts' own (seeded with seed * constant + index), so that the
      // choice of new lines does not correlate with the values.
      new_series_key_((options.seed ^ 0x6A09E667F3BCC908ULL) * 0x9E3779B97F4A7C15ULL),
      lines_left_(LinesForHosts(options.total_lines, options.hosts, host_begin, host_end)) {
  assert(host_begin < host_end && host_end <= options.hosts);
  assert(options.decimals >= 0 && options.decimals <= kCpuMaxDecimals);
  assert(options.interval_ns > 0);
  assert(options.fields >= 1 && options.fields <= kCpuFieldsPerLine);
  assert(options.new_series_ratio >= 0 && options.new_series_ratio <= 1);
  // ratio * 2^64 as the threshold of a uniform 64-bit hash; a ratio that rounds to 2^64 is 1.
  const double scaled = std::ldexp(options.new_series_ratio, 64);
  if (scaled >= std::ldexp(1.0, 64)) {
    every_line_new_ = true;
  } else {
    new_series_threshold_ = static_cast<uint64_t>(scaled);
  }
  const int32_t max_units = 100 * Pow10(options.decimals);
  size_t max_prefix = 0;
  hosts_.reserve(host_end - host_begin);
  for (uint32_t i = host_begin; i < host_end; ++i) {
    Host host;
    host.rng = HostRng(options.seed, i);
    host.prefix = "cpu,hostname=host_" + std::to_string(i);
    AppendTags(host.rng, options.tags, &host.prefix);
    for (int32_t& v : host.value_units) {
      v = static_cast<int32_t>(Below(SplitMix64(host.rng), static_cast<uint32_t>(max_units) + 1));
    }
    // Seed-independent, so that a run with another seed sends new values to the same new series.
    uint64_t tags_rng = HostRng(kNewHostTagsSeed, i);
    AppendTags(tags_rng, options.tags, &host.new_host_tags);
    // A new host's prefix: kNewHostPrefix, up to 20 digits, then its tags.
    max_prefix = std::max(
        {max_prefix, host.prefix.size(), kNewHostPrefix.size() + 20 + host.new_host_tags.size()});
    hosts_.push_back(std::move(host));
  }
  size_t fields_bytes = 0;
  for (size_t f = 0; f < options.fields; ++f) {
    // ",<name>=100.<decimals>"
    fields_bytes += 1 + kCpuFieldNames[f].size() + 1 + 4 + static_cast<size_t>(options.decimals);
  }
  max_line_bytes_ = max_prefix + fields_bytes + sizeof(ts_text_);
  FormatTimestamp();
}

bool CpuWorkload::IsNewSeriesLine(uint64_t line_index) const {
  if (every_line_new_) return true;
  if (new_series_threshold_ == 0) return false;
  // The (line_index + 1)-th output of a SplitMix64 stream: one hash per line, no state to carry,
  // so any generator can tell for any line.
  uint64_t state = new_series_key_ + line_index * 0x9E3779B97F4A7C15ULL;
  return SplitMix64(state) < new_series_threshold_;
}

uint64_t CpuWorkload::LinesForHosts(uint64_t total_lines, uint32_t hosts, uint32_t host_begin,
                                    uint32_t host_end) {
  if (total_lines == kUnboundedLines) return kUnboundedLines;
  const uint64_t full_rows = total_lines / hosts;
  const uint64_t remainder = total_lines % hosts;
  const uint64_t width = host_end - host_begin;
  uint64_t partial = 0;
  if (remainder > host_begin) partial = std::min<uint64_t>(remainder - host_begin, width);
  return full_rows * width + partial;
}

int64_t CpuWorkload::LastTimestampNs(const CpuWorkloadOptions& options, uint64_t total_lines) {
  const uint64_t rows = (total_lines + options.hosts - 1) / options.hosts;
  return options.start_ns + static_cast<int64_t>(rows - 1) * options.interval_ns;
}

void CpuWorkload::FormatTimestamp() {
  const int64_t ts_ns = options_.start_ns + static_cast<int64_t>(row_) * options_.interval_ns;
  char* p = ts_text_;
  *p++ = ' ';
  if (ts_ns < 0) {
    *p++ = '-';
    p = WriteUnsigned(p, static_cast<uint64_t>(-(ts_ns + 1)) + 1);
  } else {
    p = WriteUnsigned(p, static_cast<uint64_t>(ts_ns));
  }
  *p++ = '\n';
  ts_len_ = static_cast<size_t>(p - ts_text_);
}

size_t CpuWorkload::Generate(size_t max_lines, ByteBuffer& out) {
  // One instantiation per decimal count makes the divisions by 10^decimals constant.
  switch (options_.decimals) {
    case 0: return GenerateImpl<0>(max_lines, out);
    case 1: return GenerateImpl<1>(max_lines, out);
    case 2: return GenerateImpl<2>(max_lines, out);
    case 3: return GenerateImpl<3>(max_lines, out);
    case 4: return GenerateImpl<4>(max_lines, out);
    case 5: return GenerateImpl<5>(max_lines, out);
    default: return GenerateImpl<6>(max_lines, out);
  }
}

template <int kDecimals>
size_t CpuWorkload::GenerateImpl(size_t max_lines, ByteBuffer& out) {
  constexpr int32_t kScale = Pow10(kDecimals);
  constexpr int32_t kMaxUnits = 100 * kScale;
  constexpr uint32_t kStepChoices = 2 * kScale + 1;  // steps in [-1.0, +1.0]
  const size_t lines = static_cast<size_t>(std::min<uint64_t>(max_lines, lines_left_));
  if (lines == 0) return 0;
  char* const begin = out.Reserve(lines * max_line_bytes_);
  char* p = begin;
  const size_t fields = options_.fields;
  for (size_t n = 0; n < lines; ++n) {
    Host& host = hosts_[next_host_];
    const uint64_t line_index = row_ * options_.hosts + host_begin_ + next_host_;
    if (IsNewSeriesLine(line_index)) {
      std::memcpy(p, kNewHostPrefix.data(), kNewHostPrefix.size());
      p = WriteUnsigned(p + kNewHostPrefix.size(), line_index, kNewHostDigits);
      std::memcpy(p, host.new_host_tags.data(), host.new_host_tags.size());
      p += host.new_host_tags.size();
      ++new_series_lines_;
    } else {
      std::memcpy(p, host.prefix.data(), host.prefix.size());
      p += host.prefix.size();
    }
    for (size_t f = 0; f < fields; ++f) {
      int32_t v = host.value_units[f] +
                  static_cast<int32_t>(Below(SplitMix64(host.rng), kStepChoices)) - kScale;
      // Reflect at the bounds: a step never exceeds the range, so one reflection suffices.
      if (v < 0) v = -v;
      if (v > kMaxUnits) v = 2 * kMaxUnits - v;
      host.value_units[f] = v;

      if (f != 0) *p++ = ',';
      const std::string_view name = kCpuFieldNames[f];
      std::memcpy(p, name.data(), name.size());
      p += name.size();
      *p++ = '=';
      const int32_t whole = v / kScale;
      if (whole >= 100) {
        *p++ = '1';
        *p++ = '0';
        *p++ = '0';
      } else if (whole >= 10) {
        *p++ = static_cast<char>('0' + whole / 10);
        *p++ = static_cast<char>('0' + whole % 10);
      } else {
        *p++ = static_cast<char>('0' + whole);
      }
      if constexpr (kDecimals > 0) {
        int32_t frac = v % kScale;
        *p++ = '.';
        for (int d = kDecimals - 1; d >= 0; --d) {
          p[d] = static_cast<char>('0' + frac % 10);
          frac /= 10;
        }
        p += kDecimals;
      }
    }
    std::memcpy(p, ts_text_, ts_len_);
    p += ts_len_;
    if (++next_host_ == hosts_.size()) {
      next_host_ = 0;
      ++row_;
      FormatTimestamp();
    }
  }
  if (lines_left_ != kUnboundedLines) lines_left_ -= lines;
  out.Commit(static_cast<size_t>(p - begin));
  return lines;
}

}  // namespace ingot::bench
