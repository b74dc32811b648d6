// Logging set-up: one spdlog logger per module, configured once at start-up.
//
// SetupLogging() is called once by main before any other thread starts; Logger() may be called from
// any thread afterwards (spdlog loggers are thread-safe). Modules fetch their logger once and keep
// the pointer: "ingest", "storage", "query", "codec", "main".
#pragma once

#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>

#include "config/options.h"
#include "config/status.h"

namespace ingot {

// Configures level and format (text or JSON lines) for every module logger, writing to stderr.
Status SetupLogging(const LogOptions& options);

// The logger of `module`; created with the configured sinks on first use.
std::shared_ptr<spdlog::logger> Logger(std::string_view module);

// Passes at most `per_second` events per second and counts the rest, so that a flood of bad input
// cannot flood the log. Thread-safe; Allow() is lock-free.
class RateLimiter {
 public:
  explicit RateLimiter(std::uint32_t per_second) : per_second_(per_second) {}
  // True if this event may be logged; `*suppressed` gets the number dropped since the last
  // allowed event when a new second starts (0 otherwise).
  bool Allow(std::uint64_t* suppressed);

 private:
  const std::uint32_t per_second_;
  std::atomic<std::int64_t> window_second_{0};
  std::atomic<std::uint32_t> in_window_{0};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace ingot
