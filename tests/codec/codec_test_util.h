// Shared helpers of the codec tests: fixed-seed value patterns, dataset loading and corrupt-block
// checks.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "codec/alp_compact_internal.h"
#include "codec/codec.h"
#include "codec/format.h"

namespace ingot::codec::testing {

// The adaptive encoder, a forced encoding and the decoder of T (double or float).
template <typename T>
EncodeResult Encode(std::span<const T> v, SeriesHint& hint, Workspace& ws,
                    std::span<std::uint8_t> out) {
  if constexpr (sizeof(T) == 8) {
    return EncodeDoubles(v, hint, ws, out);
  } else {
    return EncodeFloats(v, hint, ws, out);
  }
}

template <typename T>
EncodeResult EncodeAs(FloatEncoding e, std::span<const T> v, SeriesHint& hint, Workspace& ws,
                      std::span<std::uint8_t> out) {
  if constexpr (sizeof(T) == 8) {
    return EncodeDoublesAs(e, v, hint, ws, out);
  } else {
    return EncodeFloatsAs(e, v, hint, ws, out);
  }
}

template <typename T>
Status Decode(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) {
  if constexpr (sizeof(T) == 8) {
    return DecodeDoubles(src, out, ws);
  } else {
    return DecodeFloats(src, out, ws);
  }
}

// Values from integers, each divided by `scale` (decimals as a parse of their text gives them).
template <typename T>
std::vector<T> FromInts(const std::vector<std::int64_t>& ints, double scale) {
  std::vector<T> v;
  for (std::int64_t i : ints) v.push_back(static_cast<T>(static_cast<double>(i) / scale));
  return v;
}

inline std::string DatasetsDir() {
  if (const char* env = std::getenv("INGOT_DATASETS_DIR")) return env;
  return INGOT_DATASETS_DIR;
}

inline bool ReadCsv(const std::string& path, std::vector<double>* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    out->push_back(std::strtod(line.c_str(), nullptr));
  }
  return true;
}

inline bool ReadBin(const std::string& path, std::vector<double>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  out->resize(bytes.size() / 8);
  std::memcpy(out->data(), bytes.data(), out->size() * 8);
  return true;
}

enum class Pattern {
  kConstant,
  kCounter,
  kWalk0,
  kWalk1,
  kWalk2,
  kWalk3,
  kWalk4,
  kWalk6,
  kSmooth,
  kRandomBits,
  kPrices,
  kSpecials,
  kSensor,
  kResetCounter,
};
inline constexpr Pattern kAllPatterns[] = {
    Pattern::kConstant, Pattern::kCounter,     Pattern::kWalk0,  Pattern::kWalk1,
    Pattern::kWalk2,    Pattern::kWalk3,       Pattern::kWalk4,  Pattern::kWalk6,
    Pattern::kSmooth,   Pattern::kRandomBits,  Pattern::kPrices, Pattern::kSpecials,
    Pattern::kSensor,   Pattern::kResetCounter};

inline const char* PatternName(Pattern p) {
  static const char* const kNames[] = {
      "constant", "counter", "walk0",       "walk1",  "walk2",    "walk3",  "walk4",
      "walk6",    "smooth",  "random_bits", "prices", "specials", "sensor", "reset_counter"};
  return kNames[static_cast<int>(p)];
}

// Values that must survive bit for bit.
inline std::vector<double> SpecialDoubles() {
  const double kTwo53 = 9007199254740992.0;
  return {0.0, -0.0, std::numeric_limits<double>::infinity(),
          -std::numeric_limits<double>::infinity(),
          std::bit_cast<double>(0x7ff8000000000001ull),  // quiet NaN with payload
          std::bit_cast<double>(0xfff8000000000123ull),  // negative quiet NaN
          std::bit_cast<double>(0x7ff0000000000042ull),  // signalling NaN
          std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(),
          std::bit_cast<double>(0x000fffffffffffffull), std::numeric_limits<double>::min(),
          std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(),
          kTwo53, kTwo53 - 1, kTwo53 + 2, -kTwo53, -(kTwo53 - 1), -(kTwo53 + 2),
          1e300, 1e-300, 0.1, -0.1, 123456789.123};
}

template <typename T>
std::vector<T> MakePattern(Pattern p, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + static_cast<std::uint64_t>(p));
  std::vector<T> v(n);
  auto walk = [&](int decimals) {
    const double scale = std::pow(10.0, decimals);
    std::int64_t x = static_cast<std::int64_t>(rng() % 100000);
    for (auto& y : v) {
      x += static_cast<std::int64_t>(rng() % 21) - 10;
      y = static_cast<T>(static_cast<double>(x) / scale);
    }
  };
  switch (p) {
    case Pattern::kConstant:
      for (auto& y : v) y = static_cast<T>(3.14159265358979);
      break;
    case Pattern::kCounter:
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(1000 + i * 3);
      break;
    case Pattern::kResetCounter: {
      // Irregular increments, and a restart three fifths in: one delta far below the others.
      std::uint64_t x = 1'000'000 + rng() % 1000;
      for (std::size_t i = 0; i < n; ++i) {
        x = i == n * 3 / 5 && i > 0 ? rng() % 50 : x + rng() % 41;
        v[i] = static_cast<T>(x);
      }
      break;
    }
    case Pattern::kWalk0: walk(0); break;
    case Pattern::kWalk1: walk(1); break;
    case Pattern::kWalk2: walk(2); break;
    case Pattern::kWalk3: walk(3); break;
    case Pattern::kWalk4: walk(4); break;
    case Pattern::kWalk6: walk(6); break;
    case Pattern::kSmooth:
      for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<T>(std::sin(static_cast<double>(i + seed) * 0.01) +
                              std::cos(static_cast<double>(i) * 0.003));
      }
      break;
    case Pattern::kRandomBits:
      for (auto& y : v) {
        if constexpr (sizeof(T) == 8) {
          y = std::bit_cast<T>(rng());
        } else {
          y = std::bit_cast<T>(static_cast<std::uint32_t>(rng()));
        }
      }
      break;
    case Pattern::kPrices:
      for (auto& y : v) y = static_cast<T>(static_cast<double>(rng() % 100000) / 100.0 + 0.99);
      break;
    case Pattern::kSpecials: {
      walk(2);
      const auto specials = SpecialDoubles();
      for (std::size_t i = 0; i < n; i += 1 + rng() % 13) {
        const double s = specials[rng() % specials.size()];
        if constexpr (sizeof(T) == 8) {
          v[i] = s;
        } else {
          // Float specials: keep NaN payloads in float space.
          v[i] = std::isnan(s) ? std::bit_cast<float>(0x7fc00001u + static_cast<std::uint32_t>(i))
                               : static_cast<float>(s);
        }
      }
      break;
    }
    case Pattern::kSensor: {
      std::normal_distribution<double> noise(0, 0.05);
      for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<T>(std::round((20 + std::sin(i * 0.02) + noise(rng)) * 1000) / 1000);
      }
      break;
    }
  }
  return v;
}

template <typename T>
bool BitEqual(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// `v` in encoding `e` (forced, a fresh hint) into `buf`, cut to the block's exact size so that an
// over-read while decoding it is an ASan report.
template <typename T>
EncodeResult EncodeExact(FloatEncoding e, const std::vector<T>& v, Workspace& ws,
                         std::vector<std::uint8_t>& buf) {
  buf.assign(MaxEncodedFloatBytes(v.size(), sizeof(T)), 0);
  SeriesHint hint;
  const EncodeResult r = EncodeAs<T>(e, v, hint, ws, buf);
  buf.resize(r.bytes);
  return r;
}

// Expects `block` to decode to `v`, bit for bit.
template <typename T>
void ExpectRoundTrip(const std::vector<T>& v, const std::vector<std::uint8_t>& block,
                     Workspace& ws) {
  std::vector<T> back(v.size());
  const Status st = Decode<T>(block, back, ws);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(BitEqual(v, back));
}

// A compact block's flags byte without kDividedFlag (which any block with such exceptions has).
inline int StreamFlags(const std::vector<std::uint8_t>& block) {
  return block[kAlpZstdFlagsOffset] & ~(compact::kDividedFlag | compact::kSplitFlag);
}

// `block` with the byte at `offset` replaced.
inline std::vector<std::uint8_t> WithByte(std::vector<std::uint8_t> block, std::size_t offset,
                                          std::uint8_t byte) {
  block[offset] = byte;
  return block;
}

// Expects `block`, decoded as `count` doubles, to be Corruption whose message names `needle`.
inline void ExpectCorruptNaming(const std::vector<std::uint8_t>& block, std::size_t count,
                                Workspace& ws, const std::string& needle) {
  std::vector<double> back(count);
  const Status st = DecodeDoubles(block, back, ws);
  EXPECT_TRUE(st.IsCorruption()) << needle << ": " << st.ToString();
  EXPECT_NE(st.ToString().find(needle), std::string::npos) << st.ToString();
}

}  // namespace ingot::codec::testing
