// Asio (through the project's wrapper, which must come first) plus Beast, with the short names
// bench code uses.
#pragma once

#include "config/asio.h"  // before any other Boost header

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ingot::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

}  // namespace ingot::bench
