// Percent-encoding of URL query parameters, for the HTTP server, the load tester and tests.
#pragma once

#include <string>
#include <string_view>

namespace ingot {

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view text);

// Decodes `%xx` and '+' (as space); a '%' not followed by two hex digits is kept as is.
std::string UrlDecode(std::string_view text);

}  // namespace ingot
