// codec-bench: encode/decode speed and size of ALP, Gorilla and the adaptive codec per block of
// 1024 values, on synthetic patterns and on data files, measured first and then verified.
//
//   codec-bench [--type float|double]
//               [--codec alp|gorilla|xor|adaptive|compact|dictionary|alp_radix|alp_rice|
//                        alp_huffman|alp_ranked|all]
//               [--pattern decimal|smooth|random|constant|repeating|all] [--file PATH.bin|PATH.csv
//               ...]
//               [--blocks N] [--isa scalar|avx2|avx512] [--cold] [--cpuprofile FILE]
//
// --codec compact is the background rewrite's choice (EncodeDoublesCompact: adaptive, alp_zstd,
// alp_radix, alp_rice, alp_ranked or dictionary; doubles only); --codec dictionary, alp_radix,
// alp_rice, alp_huffman (which the compact choice no longer writes) and alp_ranked force that
// encoding (raw when it cannot shrink the block).
// --cold gives every block a fresh hint, as a series' first block pays (a new series, a restart),
// also for multi-block files; without it each data set keeps one hint across its blocks and
// across the timing passes (a one-block file is then a series that repeats its block).
//
// Under the compact row, one line per encoding the compact choice wrote: that encoding's decode
// time per value against Gorilla's decode of the same blocks (a mix's row averages fast and slow
// encodings; the decode goals are per encoding, on the same data).
//
// Every codec of one (type, data) case runs in the same process on the same blocks, so the ratios
// against Gorilla compare like with like. Each series keeps one SeriesHint across its blocks, the
// way the storage layer keeps one per series.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec/float_encodings.h"
#include "codec/simd/kernels.h"

#ifdef INGOT_HAVE_PROFILER
#include <gperftools/profiler.h>
#endif

namespace ingot::codec {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kBlock = kBlockCapacity;
// Each timing repeats the whole data set until at least this many values went through.
constexpr std::size_t kMinValuesPerTiming = 4u << 20;

enum class Codec {
  kAlp,
  kGorilla,
  kXor,
  kAdaptive,
  kCompact,
  kDictionary,
  kAlpRadix,
  kAlpRice,
  kAlpHuffman,
  kAlpRanked
};

// --cold: a fresh hint for every block. Set once by main before any measurement.
bool g_cold_hints = false;
const char* CodecName(Codec c) {
  switch (c) {
    case Codec::kAlp: return "alp";
    case Codec::kGorilla: return "gorilla";
    case Codec::kXor: return "xor";
    case Codec::kAdaptive: return "adaptive";
    case Codec::kCompact: return "compact";
    case Codec::kDictionary: return "dictionary";
    case Codec::kAlpRadix: return "alp_radix";
    case Codec::kAlpRice: return "alp_rice";
    case Codec::kAlpHuffman:
      return "alp_huffman";
    case Codec::kAlpRanked:
      return "alp_ranked";
  }
  return "?";
}

struct Options {
  std::vector<std::string> types;
  std::vector<Codec> codecs;
  std::vector<std::string> patterns;
  std::vector<std::string> files;
  std::size_t blocks = 128;
  std::string isa;
  std::string cpuprofile;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(
      stderr,
      "codec-bench: %s\nusage: codec-bench [--type float|double] "
      "[--codec alp|gorilla|xor|adaptive|compact|dictionary|alp_radix|alp_rice|alp_huffman|"
      "alp_ranked|all] "
      "[--pattern decimal|smooth|random|constant|repeating|all] "
      "[--file PATH.bin|PATH.csv ...] [--blocks N] [--isa scalar|avx2|avx512] [--cold] "
      "[--cpuprofile FILE]\n",
      why);
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  bool pattern_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value for " + arg).c_str());
      return argv[++i];
    };
    if (arg == "--type") {
      const std::string v = value();
      if (v != "float" && v != "double") Usage("--type takes float or double");
      o.types.push_back(v);
    } else if (arg == "--codec") {
      const std::string v = value();
      if (v == "alp") o.codecs.push_back(Codec::kAlp);
      else if (v == "gorilla") o.codecs.push_back(Codec::kGorilla);
      else if (v == "xor") o.codecs.push_back(Codec::kXor);
      else if (v == "adaptive") o.codecs.push_back(Codec::kAdaptive);
      else if (v == "compact") o.codecs.push_back(Codec::kCompact);
      else if (v == "dictionary") o.codecs.push_back(Codec::kDictionary);
      else if (v == "alp_radix") o.codecs.push_back(Codec::kAlpRadix);
      else if (v == "alp_rice") o.codecs.push_back(Codec::kAlpRice);
      else if (v == "alp_huffman")
        o.codecs.push_back(Codec::kAlpHuffman);
      else if (v == "alp_ranked")
        o.codecs.push_back(Codec::kAlpRanked);
      else if (v == "all") {
        o.codecs = {Codec::kAlp,        Codec::kGorilla,    Codec::kXor,      Codec::kAdaptive,
                    Codec::kCompact,    Codec::kDictionary, Codec::kAlpRadix, Codec::kAlpRice,
                    Codec::kAlpHuffman, Codec::kAlpRanked};
      } else
        Usage(
            "--codec takes alp, gorilla, xor, adaptive, compact, dictionary, alp_radix, alp_rice, "
            "alp_huffman, alp_ranked or all");
    } else if (arg == "--pattern") {
      const std::string v = value();
      pattern_given = true;
      if (v == "all") {
        o.patterns = {"decimal", "smooth", "random", "constant", "repeating"};
      } else if (v == "decimal" || v == "smooth" || v == "random" || v == "constant" ||
                 v == "repeating") {
        o.patterns.push_back(v);
      } else {
        Usage("--pattern takes decimal, smooth, random, constant, repeating or all");
      }
    } else if (arg == "--file") {
      o.files.push_back(value());
      while (i + 1 < argc && argv[i + 1][0] != '-') o.files.push_back(argv[++i]);
    } else if (arg == "--blocks") {
      o.blocks = std::strtoul(value().c_str(), nullptr, 10);
      if (o.blocks == 0) Usage("--blocks must be positive");
    } else if (arg == "--isa") {
      o.isa = value();
      if (o.isa != "scalar" && o.isa != "avx2" && o.isa != "avx512") {
        Usage("--isa takes scalar, avx2 or avx512");
      }
    } else if (arg == "--cold") {
      g_cold_hints = true;
    } else if (arg == "--cpuprofile") {
      o.cpuprofile = value();
    } else if (arg == "--help" || arg == "-h") {
      Usage("help");
    } else {
      Usage(("unknown argument " + arg).c_str());
    }
  }
  if (o.types.empty()) o.types = {"double", "float"};
  if (o.codecs.empty()) o.codecs = {Codec::kAlp, Codec::kGorilla, Codec::kAdaptive};
  if (!pattern_given && o.files.empty()) {
    o.patterns = {"decimal", "smooth", "random", "constant", "repeating"};
  }
  return o;
}

std::vector<double> MakePattern(const std::string& name, std::size_t count) {
  std::vector<double> v(count);
  std::mt19937_64 rng(42);
  // "repeating": 97 values with two decimals, over and over (what the compact choice writes as
  // alp_zstd, whose matches find the repeats).
  std::vector<double> cycle(97);
  for (double& x : cycle) x = static_cast<double>(1000 + rng() % 8000) / 100;
  for (std::size_t i = 0; i < count; ++i) {
    const double x = static_cast<double>(i);
    if (name == "decimal") v[i] = static_cast<double>(i % 100000) * 0.01 - 1;
    if (name == "smooth") v[i] = std::sin(x * 0.001) * 100 + std::cos(x * 0.0003) * 10;
    if (name == "random") v[i] = std::bit_cast<double>(rng());
    if (name == "constant") v[i] = 3.14159265358979323846;
    if (name == "repeating") v[i] = cycle[i % cycle.size()];
  }
  return v;
}

bool LoadFile(const std::string& path, std::vector<double>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0) {
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) out->push_back(std::strtod(line.c_str(), nullptr));
    }
  } else {
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    out->resize(bytes.size() / 8);
    std::memcpy(out->data(), bytes.data(), out->size() * 8);
  }
  return !out->empty();
}

// Interleaved timing trials per case (see MeasureAll).
constexpr int kTrials = 21;

struct Row {
  // The fastest trial's time per value.
  double encode_ns = 0;
  double decode_ns = 0;
  // Every trial's time per value, for ratios of paired trials.
  double encode_trial_ns[kTrials] = {};
  double decode_trial_ns[kTrials] = {};
  double bits_per_value = 0;
  std::size_t mix[kFloatEncodingCount] = {};
  bool verified = false;
};

template <typename T>
EncodeResult EncodeBlock(Codec codec, std::span<const T> v, SeriesHint& hint, Workspace& ws,
                         std::span<std::uint8_t> out) {
  if constexpr (sizeof(T) == 8) {
    switch (codec) {
      case Codec::kAlp: return EncodeDoublesAs(FloatEncoding::kAlp, v, hint, ws, out);
      case Codec::kGorilla: return EncodeDoublesAs(FloatEncoding::kGorilla, v, hint, ws, out);
      case Codec::kXor: return EncodeDoublesAs(FloatEncoding::kXorGroups, v, hint, ws, out);
      case Codec::kAdaptive: return EncodeDoubles(v, hint, ws, out);
      case Codec::kCompact: return EncodeDoublesCompact(v, hint, ws, out);
      case Codec::kDictionary: return EncodeDoublesAs(FloatEncoding::kDictionary, v, hint, ws, out);
      case Codec::kAlpRadix: return EncodeDoublesAs(FloatEncoding::kAlpRadix, v, hint, ws, out);
      case Codec::kAlpRice: return EncodeDoublesAs(FloatEncoding::kAlpRice, v, hint, ws, out);
      case Codec::kAlpHuffman:
        return EncodeDoublesAs(FloatEncoding::kAlpHuffman, v, hint, ws, out);
      case Codec::kAlpRanked:
        return EncodeDoublesAs(FloatEncoding::kAlpRanked, v, hint, ws, out);
    }
  } else {
    switch (codec) {
      case Codec::kAlp: return EncodeFloatsAs(FloatEncoding::kAlp, v, hint, ws, out);
      case Codec::kGorilla: return EncodeFloatsAs(FloatEncoding::kGorilla, v, hint, ws, out);
      case Codec::kXor: return EncodeFloatsAs(FloatEncoding::kXorGroups, v, hint, ws, out);
      case Codec::kAdaptive: return EncodeFloats(v, hint, ws, out);
      case Codec::kCompact:
        break;  // doubles only: see RunCase
      case Codec::kDictionary: return EncodeFloatsAs(FloatEncoding::kDictionary, v, hint, ws, out);
      case Codec::kAlpRadix: return EncodeFloatsAs(FloatEncoding::kAlpRadix, v, hint, ws, out);
      case Codec::kAlpRice: return EncodeFloatsAs(FloatEncoding::kAlpRice, v, hint, ws, out);
      case Codec::kAlpHuffman:
        return EncodeFloatsAs(FloatEncoding::kAlpHuffman, v, hint, ws, out);
      case Codec::kAlpRanked:
        return EncodeFloatsAs(FloatEncoding::kAlpRanked, v, hint, ws, out);
    }
  }
  return {};
}

template <typename T>
Status DecodeBlock(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) {
  if constexpr (sizeof(T) == 8) {
    return DecodeDoubles(src, out, ws);
  } else {
    return DecodeFloats(src, out, ws);
  }
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// One codec's encoded copy of a data set and its timings.
template <typename T>
struct Run {
  Codec codec;
  std::vector<std::uint8_t> encoded;
  std::vector<std::size_t> sizes;
  Row row;
  // The series' hint: kept from one pass over the data to the next (the series goes on), so that
  // a one-block file is timed warm too; --cold replaces it before every block.
  SeriesHint hint;
};

// Encodes every block `reps` times and returns the seconds taken.
template <typename T>
double TimeEncode(Run<T>& run, const std::vector<T>& data, std::size_t reps, Workspace& ws,
                  bool count_mix) {
  const std::size_t blocks = run.sizes.size();
  const std::size_t slot = MaxEncodedFloatBytes(kBlock, sizeof(T));
  SeriesHint& hint = run.hint;
  const auto start = Clock::now();
  for (std::size_t r = 0; r < reps; ++r) {
    for (std::size_t b = 0; b < blocks; ++b) {
      if (g_cold_hints) hint = SeriesHint{};
      const std::size_t n = std::min(kBlock, data.size() - b * kBlock);
      const EncodeResult res = EncodeBlock<T>(run.codec, {data.data() + b * kBlock, n}, hint, ws,
                                              {run.encoded.data() + b * slot, slot});
      run.sizes[b] = res.bytes;
      if (count_mix && r == 0) ++run.row.mix[static_cast<int>(res.encoding)];
    }
  }
  return Seconds(start, Clock::now());
}

// Decodes block `b` of `run` into its place in `decoded` (exits on an error); returns its count.
template <typename T>
std::size_t DecodeRunBlock(const Run<T>& run, std::size_t b, std::vector<T>& decoded,
                           Workspace& ws) {
  const std::size_t slot = MaxEncodedFloatBytes(kBlock, sizeof(T));
  const std::size_t n = std::min(kBlock, decoded.size() - b * kBlock);
  const Status st = DecodeBlock<T>({run.encoded.data() + b * slot, run.sizes[b]},
                                   std::span<T>(decoded.data() + b * kBlock, n), ws);
  if (!st.ok()) {
    std::fprintf(stderr, "decode failed: %s\n", st.ToString().c_str());
    std::exit(1);
  }
  return n;
}

template <typename T>
double TimeDecode(const Run<T>& run, std::vector<T>& decoded, std::size_t reps, Workspace& ws) {
  const auto start = Clock::now();
  for (std::size_t r = 0; r < reps; ++r) {
    for (std::size_t b = 0; b < run.sizes.size(); ++b) (void)DecodeRunBlock(run, b, decoded, ws);
  }
  return Seconds(start, Clock::now());
}

// Times every codec of one case in interleaved trials and keeps each codec's fastest trial: on a
// shared, noisy machine the minimum is the time least disturbed by other work. Every trial times
// each codec once, back to back, so the codecs of one trial share the machine's state of that
// moment; the ratios between rows come from those pairs (see PairedRatio). Many short trials give
// both statistics more chances, and the codec that goes first rotates, so that none always runs
// right after the decode phase.
template <typename T>
void MeasureAll(std::vector<Run<T>>& runs, const std::vector<T>& data, Workspace& ws) {
  const std::size_t blocks = (data.size() + kBlock - 1) / kBlock;
  const std::size_t slot = MaxEncodedFloatBytes(kBlock, sizeof(T));
  const std::size_t reps = std::max<std::size_t>(1, kMinValuesPerTiming / kTrials / data.size());
  const double values = static_cast<double>(reps * data.size());
  std::vector<T> decoded(data.size());
  for (auto& run : runs) {
    run.encoded.assign(blocks * slot, 0);
    run.sizes.assign(blocks, 0);
    run.row = Row{};
    (void)TimeEncode(run, data, 1, ws, true);  // warm-up; counts the encodings' mix
    run.row.encode_ns = run.row.decode_ns = 1e300;
  }
  for (int t = 0; t < kTrials; ++t) {
    for (std::size_t k = 0; k < runs.size(); ++k) {
      Run<T>& run = runs[(k + static_cast<std::size_t>(t)) % runs.size()];
      run.row.encode_trial_ns[t] = TimeEncode(run, data, reps, ws, false) * 1e9 / values;
      run.row.encode_ns = std::min(run.row.encode_ns, run.row.encode_trial_ns[t]);
    }
    for (std::size_t k = 0; k < runs.size(); ++k) {
      Run<T>& run = runs[(k + static_cast<std::size_t>(t)) % runs.size()];
      run.row.decode_trial_ns[t] = TimeDecode(run, decoded, reps, ws) * 1e9 / values;
      run.row.decode_ns = std::min(run.row.decode_ns, run.row.decode_trial_ns[t]);
    }
  }
  for (auto& run : runs) {
    (void)TimeDecode(run, decoded, 1, ws);
    std::size_t total = 0;
    for (std::size_t s : run.sizes) total += s;
    run.row.bits_per_value = static_cast<double>(total) * 8 / static_cast<double>(data.size());
    run.row.verified = std::memcmp(decoded.data(), data.data(), data.size() * sizeof(T)) == 0;
  }
}

// The ALP encode of one block split into its phases, per value: exponent search (warm hint),
// encode (integers, exceptions, widths: the dry run) and pack (the write that follows).
template <typename T>
void AlpPhases(const std::vector<T>& data, Workspace& ws, double* search_ns, double* encode_ns,
               double* pack_ns) {
  const std::size_t blocks = data.size() / kBlock;
  if (blocks == 0) {
    *search_ns = *encode_ns = *pack_ns = 0;
    return;
  }
  std::vector<std::uint8_t> out(MaxEncodedFloatBytes(kBlock, sizeof(T)));
  const std::size_t reps = std::max<std::size_t>(1, kMinValuesPerTiming / (blocks * kBlock));
  std::vector<AlpChoice> choices(blocks);
  // Per phase, the fastest pass over the data (see MeasureAll).
  double t_search = 1e300, t_dry = 1e300, t_full = 1e300;
  // The hint is warmed by one untimed pass and then kept, as for a series the store has seen
  // before: the search phase is the warm-hint path (and whatever re-searches it triggers).
  SeriesHint hint;
  for (std::size_t b = 0; b < blocks; ++b) {
    (void)SearchAlpExponents<T>({data.data() + b * kBlock, kBlock}, hint, ws);
  }
  for (std::size_t r = 0; r < reps; ++r) {
    auto a = Clock::now();
    for (std::size_t b = 0; b < blocks; ++b) {
      choices[b] = SearchAlpExponents<T>({data.data() + b * kBlock, kBlock}, hint, ws);
    }
    auto c = Clock::now();
    for (std::size_t b = 0; b < blocks; ++b) {
      (void)EncodeAlp<T, true>({data.data() + b * kBlock, kBlock}, choices[b].exponent,
                               choices[b].factor, AlpMode::kPlain, ws, out, nullptr);
    }
    auto d = Clock::now();
    for (std::size_t b = 0; b < blocks; ++b) {
      (void)EncodeAlp<T, false>({data.data() + b * kBlock, kBlock}, choices[b].exponent,
                                choices[b].factor, AlpMode::kPlain, ws, out, nullptr);
    }
    auto e = Clock::now();
    t_search = std::min(t_search, Seconds(a, c));
    t_dry = std::min(t_dry, Seconds(c, d));
    t_full = std::min(t_full, Seconds(d, e));
  }
  const double values = static_cast<double>(blocks * kBlock);
  *search_ns = t_search * 1e9 / values;
  *encode_ns = t_dry * 1e9 / values;
  *pack_ns = std::max(0.0, t_full - t_dry) * 1e9 / values;
}

std::string MixString(const Row& row) {
  std::size_t total = 0;
  for (std::size_t m : row.mix) total += m;
  std::string s;
  for (int e = 0; e < kFloatEncodingCount; ++e) {
    if (row.mix[e] == 0) continue;
    if (!s.empty()) s += ",";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s:%.0f%%", FloatEncodingName(static_cast<FloatEncoding>(e)),
                  100.0 * static_cast<double>(row.mix[e]) / static_cast<double>(total));
    s += buf;
  }
  return s;
}

// The median over trials of base's time over row's time in the same trial: a slow moment of the
// machine slows both sides of a pair alike, and the median ignores the pairs it split.
double PairedRatio(const double (&base)[kTrials], const double (&row)[kTrials]) {
  double ratios[kTrials];
  for (int t = 0; t < kTrials; ++t) ratios[t] = base[t] / row[t];
  std::nth_element(ratios, ratios + kTrials / 2, ratios + kTrials);
  return ratios[kTrials / 2];
}

// Decode time per value of the blocks `which` of `run`, `reps` times over.
template <typename T>
double TimeDecodeBlocks(const Run<T>& run, const std::vector<std::size_t>& which,
                        std::vector<T>& decoded, std::size_t reps, Workspace& ws) {
  std::size_t values = 0;
  const auto start = Clock::now();
  for (std::size_t r = 0; r < reps; ++r) {
    for (std::size_t b : which) values += DecodeRunBlock(run, b, decoded, ws);
  }
  return Seconds(start, Clock::now()) * 1e9 / static_cast<double>(values);
}

// The compact run's blocks grouped by the encoding written; per group, its decode against
// Gorilla's decode of the same blocks, in interleaved trials (fastest trial, paired ratio).
template <typename T>
void CompactDecodeByEncoding(const Run<T>& compact, const Run<T>& gorilla, std::size_t count,
                             const std::string& type, const std::string& name, Workspace& ws) {
  const std::size_t slot = MaxEncodedFloatBytes(kBlock, sizeof(T));
  std::vector<std::size_t> groups[kFloatEncodingCount];
  for (std::size_t b = 0; b < compact.sizes.size(); ++b) {
    FloatEncoding e;
    if (!PeekFloatEncoding({compact.encoded.data() + b * slot, compact.sizes[b]}, &e).ok()) continue;
    groups[static_cast<int>(e)].push_back(b);
  }
  std::vector<T> decoded(count);
  for (int e = 0; e < kFloatEncodingCount; ++e) {
    const std::vector<std::size_t>& which = groups[e];
    if (which.empty()) continue;
    const std::size_t reps =
        std::max<std::size_t>(1, kMinValuesPerTiming / kTrials / (which.size() * kBlock));
    double own[kTrials], base[kTrials];
    double own_min = 1e300, base_min = 1e300;
    for (int t = 0; t < kTrials; ++t) {
      own[t] = TimeDecodeBlocks(compact, which, decoded, reps, ws);
      base[t] = TimeDecodeBlocks(gorilla, which, decoded, reps, ws);
      own_min = std::min(own_min, own[t]);
      base_min = std::min(base_min, base[t]);
    }
    std::printf("%-6s %-10s %-28s   compact decode of its %s blocks (%zu): %.2f ns/v, gorilla on "
                "the same blocks %.2f ns/v, dec_vsG %.2fx\n",
                type.c_str(), "", name.c_str(), FloatEncodingName(static_cast<FloatEncoding>(e)),
                which.size(), own_min, base_min, PairedRatio(base, own));
  }
}

template <typename T>
bool RunCase(const Options& o, const std::string& type, const std::string& name,
             const std::vector<double>& source, Workspace& ws) {
  std::vector<T> data(source.begin(), source.end());
  if constexpr (sizeof(T) == 4) {
    // Narrow bit patterns directly so random patterns stay random (and NaN payloads survive).
    if (name == "random") {
      for (std::size_t i = 0; i < data.size(); ++i) {
        data[i] = std::bit_cast<float>(static_cast<std::uint32_t>(std::bit_cast<std::uint64_t>(source[i])));
      }
    }
  }
  // Gorilla first: the other rows are compared against it.
  std::vector<Codec> order = {Codec::kGorilla};
  for (Codec c : o.codecs) {
    // The background rewrite compacts float64 blocks only (the node stores doubles): a float
    // "compact" row would time an encoding that no stored block takes.
    if (sizeof(T) == 4 && c == Codec::kCompact) continue;
    if (c != Codec::kGorilla) order.push_back(c);
  }
  const bool show_gorilla =
      std::find(o.codecs.begin(), o.codecs.end(), Codec::kGorilla) != o.codecs.end();
  std::vector<Run<T>> runs;
  for (Codec c : order) runs.push_back(Run<T>{c, {}, {}, {}, {}});
  MeasureAll(runs, data, ws);
  const Row gorilla = runs[0].row;
  bool ok = true;
  for (const auto& run : runs) {
    const Codec c = run.codec;
    const Row& row = run.row;
    ok = ok && row.verified;
    if (c == Codec::kGorilla && !show_gorilla) continue;
    const double bytes = sizeof(T);
    std::printf("%-6s %-10s %-28s %8.2f %8.0f %8.2f %8.0f %7.2f %7.2fx %7.2fx %6.3f  %-4s %s\n",
                type.c_str(), CodecName(c), name.c_str(), row.encode_ns,
                bytes * 1e3 / row.encode_ns, row.decode_ns, bytes * 1e3 / row.decode_ns,
                row.bits_per_value, PairedRatio(gorilla.encode_trial_ns, row.encode_trial_ns),
                PairedRatio(gorilla.decode_trial_ns, row.decode_trial_ns),
                row.bits_per_value / gorilla.bits_per_value,
                row.verified ? "ok" : "FAIL", MixString(row).c_str());
    if (c == Codec::kCompact) CompactDecodeByEncoding(run, runs[0], data.size(), type, name, ws);
    if (c == Codec::kAlp) {
      double s, e, p;
      AlpPhases(data, ws, &s, &e, &p);
      std::printf("%-6s %-10s %-28s   alp encode phases per value: search %.3f ns, encode %.3f ns, "
                  "pack %.3f ns (per block: %.2f / %.2f / %.2f us)\n",
                  type.c_str(), "", name.c_str(), s, e, p, s * kBlock / 1e3, e * kBlock / 1e3,
                  p * kBlock / 1e3);
    }
  }
  return ok;
}

}  // namespace
}  // namespace ingot::codec

int main(int argc, char** argv) {
  using namespace ingot::codec;
  const Options o = Parse(argc, argv);
  if (!o.isa.empty()) {
    const auto level = o.isa == "scalar" ? simd::IsaLevel::kScalar
                       : o.isa == "avx2" ? simd::IsaLevel::kAvx2
                                         : simd::IsaLevel::kAvx512;
    if (!simd::ForceIsa(level)) {
      std::fprintf(stderr, "codec-bench: ISA %s not available on this CPU/build\n", o.isa.c_str());
      return 2;
    }
  }
  struct Case {
    std::string name;
    std::vector<double> values;
  };
  std::vector<Case> cases;
  for (const auto& p : o.patterns) cases.push_back({p, MakePattern(p, o.blocks * kBlock)});
  for (const auto& f : o.files) {
    Case c{f.substr(f.find_last_of('/') + 1), {}};
    if (!LoadFile(f, &c.values)) {
      std::fprintf(stderr, "codec-bench: cannot read %s\n", f.c_str());
      return 2;
    }
    cases.push_back(std::move(c));
  }
  auto ws = std::make_unique<Workspace>();
#ifdef INGOT_HAVE_PROFILER
  if (!o.cpuprofile.empty()) ProfilerStart(o.cpuprofile.c_str());
#else
  if (!o.cpuprofile.empty()) std::fprintf(stderr, "codec-bench: built without the profiler\n");
#endif
  std::printf("# isa=%s, %zu-value blocks; ns/v: fastest of %d interleaved trials; vsG: median "
              "over trials of Gorilla's time over this row's in the same trial; size/G: size "
              "over Gorilla's\n",
              simd::ActiveKernels().name, kBlock, kTrials);
  std::printf("%-6s %-10s %-28s %8s %8s %8s %8s %7s %8s %8s %6s  %-4s %s\n", "type", "codec",
              "data", "enc_ns/v", "enc_MB/s", "dec_ns/v", "dec_MB/s", "bits/v", "enc_vsG",
              "dec_vsG", "size/G", "rt", "encodings");
  bool ok = true;
  for (const auto& t : o.types) {
    for (const auto& c : cases) {
      ok = (t == "double" ? RunCase<double>(o, t, c.name, c.values, *ws)
                          : RunCase<float>(o, t, c.name, c.values, *ws)) && ok;
    }
  }
#ifdef INGOT_HAVE_PROFILER
  if (!o.cpuprofile.empty()) ProfilerStop();
#endif
  return ok ? 0 : 1;
}
