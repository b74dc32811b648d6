// JSON string quoting, shared by every module that writes JSON by hand (responses, reports, logs).
#pragma once

#include <string>
#include <string_view>

namespace ingot {

// Appends `text` as a quoted JSON string (escaping quotes, backslashes and control bytes).
// Bytes >= 0x80 pass through: callers hand in UTF-8.
void AppendJsonString(std::string_view text, std::string* out);

}  // namespace ingot
