// libFuzzer target for one codec decoder (chosen by INGOT_FUZZ_DECODER at build time). The first
// two input bytes give the expected value count; the rest is the block. Any input must give an
// error or a valid decode; a successful decode of a float block must re-encode and round trip.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "codec/codec.h"

namespace {

ingot::codec::Workspace& Ws() {
  static auto* ws = new ingot::codec::Workspace();
  return *ws;
}

template <typename T>
void FuzzFloat(const std::uint8_t* data, std::size_t size, std::size_t count) {
  using namespace ingot::codec;
  using ingot::Status;
  std::vector<T> out(count);
  const Status st = [&] {
    if constexpr (sizeof(T) == 8) return DecodeDoubles({data, size}, out, Ws());
    else return DecodeFloats({data, size}, out, Ws());
  }();
  if (!st.ok()) return;
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(count, sizeof(T)));
  SeriesHint hint;
  EncodeResult r;
  if constexpr (sizeof(T) == 8) r = EncodeDoubles(out, hint, Ws(), buf);
  else r = EncodeFloats(out, hint, Ws(), buf);
  std::vector<T> back(count);
  Status again;
  if constexpr (sizeof(T) == 8) again = DecodeDoubles({buf.data(), r.bytes}, back, Ws());
  else again = DecodeFloats({buf.data(), r.bytes}, back, Ws());
  if (!again.ok() || std::memcmp(back.data(), out.data(), count * sizeof(T)) != 0) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t count = 1 + ((data[0] | (data[1] << 8)) % ingot::codec::kBlockCapacity);
  data += 2;
  size -= 2;
#if INGOT_FUZZ_DECODER == 0
  FuzzFloat<double>(data, size, count);
#elif INGOT_FUZZ_DECODER == 1
  FuzzFloat<float>(data, size, count);
#else
  std::vector<std::int64_t> out(count);
  (void)ingot::codec::DecodeInts({data, size}, out, Ws());
#endif
  return 0;
}
