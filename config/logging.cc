#include "config/logging.h"

#include <chrono>
#include <mutex>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace ingot {
namespace {

std::mutex g_mutex;
std::vector<spdlog::sink_ptr> g_sinks;
spdlog::level::level_enum g_level = spdlog::level::info;
std::string g_pattern = "%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ [%n] %v";

}  // namespace

Status SetupLogging(const LogOptions& options) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_level = spdlog::level::from_str(options.level);
  if (options.level != "off" && g_level == spdlog::level::off) {
    return Status::InvalidArgument("log.level '" + options.level + "' is not a level");
  }
  if (options.format == "json") {
    // Messages are ours and never contain raw quotes unescaped: callers quote user text with {:?}.
    g_pattern = R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","module":"%n","msg":"%v"})";
  } else if (options.format != "text") {
    return Status::InvalidArgument("log.format '" + options.format + "' is not text|json");
  }
  if (g_sinks.empty()) g_sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) {
    l->set_level(g_level);
    l->set_pattern(g_pattern);
  });
  return Status::OK();
}

std::shared_ptr<spdlog::logger> Logger(std::string_view module) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::string name(module);
  if (auto existing = spdlog::get(name)) return existing;
  if (g_sinks.empty()) g_sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  auto logger = std::make_shared<spdlog::logger>(name, g_sinks.begin(), g_sinks.end());
  logger->set_level(g_level);
  logger->set_pattern(g_pattern);
  spdlog::register_logger(logger);
  return logger;
}

bool RateLimiter::Allow(std::uint64_t* suppressed) {
  *suppressed = 0;
  const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
  std::int64_t window = window_second_.load(std::memory_order_relaxed);
  if (now_s != window &&
      window_second_.compare_exchange_strong(window, now_s, std::memory_order_relaxed)) {
    in_window_.store(0, std::memory_order_relaxed);
    *suppressed = dropped_.exchange(0, std::memory_order_relaxed);
  }
  if (in_window_.fetch_add(1, std::memory_order_relaxed) < per_second_) return true;
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

}  // namespace ingot
