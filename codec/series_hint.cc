// Saving and loading a SeriesHint (series_hint.h).
#include "codec/series_hint.h"

#include "codec/alp_constants.h"
#include "codec/codec.h"
#include "codec/format.h"

namespace ingot::codec {
namespace {

constexpr std::uint8_t kSavedHintFormat = 1;

bool ValidEncoding(std::uint8_t e) {
  return e == SeriesHint::kNoEncoding || e <= static_cast<std::uint8_t>(FloatEncoding::kAlpRadix);
}

}  // namespace

void SaveHint(const SeriesHint& hint, std::span<std::uint8_t, kSavedHintBytes> out) noexcept {
  std::uint8_t* p = out.data();
  *p++ = kSavedHintFormat;
  for (int k = 0; k < SeriesHint::kPairs; ++k) *p++ = hint.exponent[k];
  for (int k = 0; k < SeriesHint::kPairs; ++k) *p++ = hint.factor[k];
  *p++ = hint.last_encoding;
  *p++ = hint.blocks_since_search;
  StoreLe<std::uint16_t>(p, hint.last_bytes);
  p += 2;
  *p++ = hint.blocks_since_choice;
  *p++ = hint.runner_up_encoding;
  StoreLe<std::uint16_t>(p, hint.runner_up_bytes);
  p += 2;
  *p++ = hint.rd_right_bits;
  *p++ = hint.alp_pause_blocks;
}

bool LoadHint(std::span<const std::uint8_t> bytes, SeriesHint* hint) noexcept {
  if (bytes.size() != kSavedHintBytes || bytes[0] != kSavedHintFormat) return false;
  const std::uint8_t* p = bytes.data() + 1;
  SeriesHint h;
  for (int k = 0; k < SeriesHint::kPairs; ++k) h.exponent[k] = *p++;
  for (int k = 0; k < SeriesHint::kPairs; ++k) h.factor[k] = *p++;
  h.last_encoding = *p++;
  h.blocks_since_search = *p++;
  h.last_bytes = LoadLe<std::uint16_t>(p);
  p += 2;
  h.blocks_since_choice = *p++;
  h.runner_up_encoding = *p++;
  h.runner_up_bytes = LoadLe<std::uint16_t>(p);
  p += 2;
  h.rd_right_bits = *p++;
  h.alp_pause_blocks = *p++;
  // A pair slot is empty (both 0xff) or a pair of double (the wider range; a float series'
  // encoder skips pairs beyond its own).
  for (int k = 0; k < SeriesHint::kPairs; ++k) {
    const bool empty = h.exponent[k] == 0xff && h.factor[k] == 0xff;
    const bool pair =
        h.exponent[k] <= AlpConstants<double>::kMaxExponent && h.factor[k] <= h.exponent[k];
    if (!empty && !pair) return false;
  }
  if (!ValidEncoding(h.last_encoding) || !ValidEncoding(h.runner_up_encoding)) return false;
  if (h.rd_right_bits > 64) return false;
  *hint = h;
  return true;
}

}  // namespace ingot::codec
