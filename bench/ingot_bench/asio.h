// The one way bench code includes Asio and Beast.
//
// Boost 1.74's Asio uses std::exchange without including <utility>, which GCC 12's standard
// library no longer pulls in transitively; including it first keeps every file building.
#pragma once

#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace ingot::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

}  // namespace ingot::bench
