// The one way to include Boost.Asio here.
//
// Boost 1.74's Asio uses std::exchange without including <utility>, which GCC 12's headers no
// longer pull in transitively; every Asio user includes this wrapper instead of Asio directly.
#pragma once

#include <utility>  // must precede Asio (see above)

#include <boost/asio.hpp>

namespace ingot {
namespace asio = boost::asio;
}  // namespace ingot
