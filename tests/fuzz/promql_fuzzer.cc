// libFuzzer target for the PromQL parser and the parameter parsers: any text must parse or be
// refused with InvalidArgument, never crash or recurse without limit; what the parser accepts
// prints as text that parses again to the same text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "query/promql_ast.h"
#include "query/promql_parser.h"
#include "query/text_format.h"

namespace {
void Check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ingot;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<promql::Expr> tree;
  const Status whole = promql::Parse(text, &tree);
  if (whole.ok()) {
    Check(tree != nullptr);
    const std::string printed = promql::ToString(*tree);
    std::unique_ptr<promql::Expr> again;
    Check(promql::Parse(printed, &again).ok() && promql::ToString(*again) == printed);
  } else {
    Check(whole.IsInvalidArgument());
  }
  std::int64_t ns = 0;
  if (ParseTimeNs(text, &ns).ok()) Check(ns > -kMaxTimeMagnitudeNs && ns < kMaxTimeMagnitudeNs);
  if (ParseDurationNs(text, &ns, /*allow_zero=*/true).ok()) {
    Check(ns >= 0 && ns < kMaxTimeMagnitudeNs);
  }
  return 0;
}
