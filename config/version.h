// The version of Ingot this binary was built as (the CMake project version).
#pragma once

#ifndef INGOT_VERSION
#define INGOT_VERSION "0.0.0"
#endif

namespace ingot {

inline constexpr const char* kVersion = INGOT_VERSION;

}  // namespace ingot
