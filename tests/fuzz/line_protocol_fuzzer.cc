// libFuzzer target for the line-protocol parser: any input, split into entries as a connection
// would, must parse or be refused with a reason, never read out of bounds. Accepted lines must
// hold what the parser promises: a measurement, at least one field, unique tag keys, views inside
// the input, and describing an error must work on the line it came from.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ingest/line_parser.h"
#include "ingest/line_protocol_escape.h"

namespace {

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ingot::ingest;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static LineParser parser;
  ParsedLine parsed;
  std::string scratch;
  std::size_t pos = 0;
  std::string_view line;
  while (NextLine(input, &pos, &line, /*end_of_input=*/true)) {
    Check(Inside(line, input));
    ParseError error;
    const ParseResult result = parser.Parse(line, 1'700'000'000'000'000'000, &parsed, &error);
    if (result == ParseResult::kError) {
      Check(!error.reason.empty() && error.offset <= line.size());
      (void)error.Describe(line);
      continue;
    }
    if (result == ParseResult::kSkip) continue;
    Check(!parsed.measurement.empty() && !parsed.fields.empty());
    Check(Inside(parsed.measurement, line) && Inside(parsed.series_prefix, line));
    for (std::size_t i = 0; i < parsed.tags.size(); ++i) {
      Check(Inside(parsed.tags[i].key, line) && Inside(parsed.tags[i].value, line));
      for (std::size_t j = 0; j < i; ++j) Check(parsed.tags[i].key != parsed.tags[j].key);
      scratch.clear();
      AppendUnescaped(parsed.tags[i].key, EscapeContext::kTagKey, &scratch);
      AppendUnescaped(parsed.tags[i].value, EscapeContext::kTagValue, &scratch);
    }
    for (const Field& f : parsed.fields) {
      Check(Inside(f.key, line) && Inside(f.text, line));
      scratch.clear();
      AppendUnescaped(f.key, EscapeContext::kFieldKey, &scratch);
      if (f.type == FieldType::kString) AppendUnescaped(f.text, EscapeContext::kStringValue, &scratch);
    }
  }
  return 0;
}
