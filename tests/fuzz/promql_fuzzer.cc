// libFuzzer target for the PromQL parser and the parameter parsers: any text must parse or be
// refused with InvalidArgument, within the depth bound, never crash or recurse without limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "query/expr.h"
#include "query/text_format.h"

namespace {
void Check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ingot;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<Expr> expr;
  const Status st = ParseExpr(text, &expr);
  if (st.ok()) {
    Check(expr != nullptr && expr->height >= 1 && expr->height <= kMaxExprDepth);
  } else {
    Check(st.IsInvalidArgument());
  }
  std::int64_t ns = 0;
  if (ParseTimeNs(text, &ns).ok()) Check(ns > -kMaxTimeMagnitudeNs && ns < kMaxTimeMagnitudeNs);
  if (ParseDurationNs(text, &ns, /*allow_zero=*/true).ok()) {
    Check(ns >= 0 && ns < kMaxTimeMagnitudeNs);
  }
  return 0;
}
