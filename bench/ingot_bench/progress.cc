#include "bench/ingot_bench/progress.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "bench/ingot_bench/report.h"

namespace ingot::bench {
namespace {

using Clock = std::chrono::steady_clock;
// A log line every few seconds is enough when nobody watches it live.
constexpr int kPlainEverySeconds = 5;
constexpr int kBarWidth = 24;
// A shorter tail is too noisy to stand beside whole seconds in the percentiles.
constexpr double kMinPartialSeconds = 0.25;

}  // namespace

ProgressMeter::ProgressMeter(std::function<CounterTotals()> read, uint64_t total_values,
                             double duration_s, Mode mode, std::FILE* out)
    : read_(std::move(read)),
      total_values_(total_values),
      duration_s_(duration_s),
      mode_(mode),
      out_(out) {}

ProgressMeter::~ProgressMeter() {
  if (thread_.joinable()) Stop();
}

ProgressMeter::Mode ProgressMeter::ModeFor(std::FILE* out, bool quiet) {
  if (quiet) return Mode::kQuiet;
  return isatty(fileno(out)) ? Mode::kTerminal : Mode::kPlain;
}

void ProgressMeter::Start() {
  start_ = Clock::now();
  thread_ = std::thread([this] { Loop(); });
}

std::vector<double> ProgressMeter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  const double partial_s =
      std::chrono::duration<double>(Clock::now() - start_).count() - whole_seconds_;
  if (partial_s >= kMinPartialSeconds || (per_second_values_.empty() && partial_s > 0)) {
    const CounterTotals now = read_();
    per_second_values_.push_back(static_cast<double>(now.values - previous_.values) / partial_s);
  }
  if (mode_ == Mode::kTerminal) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  return std::move(per_second_values_);
}

void ProgressMeter::Loop() {
  for (int second = 1;; ++second) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_cv_.wait_until(lock, start_ + std::chrono::seconds(second),
                              [this] { return stop_; })) {
        return;
      }
    }
    const CounterTotals now = read_();
    const double values_per_s = static_cast<double>(now.values - previous_.values);
    const double mb_per_s = static_cast<double>(now.bytes - previous_.bytes) / 1e6;
    per_second_values_.push_back(values_per_s);
    previous_ = now;
    whole_seconds_ = second;
    if (mode_ == Mode::kTerminal || (mode_ == Mode::kPlain && second % kPlainEverySeconds == 0)) {
      Print(static_cast<double>(second), now, values_per_s, mb_per_s);
    }
  }
}

void ProgressMeter::Print(double elapsed_s, const CounterTotals& now, double values_per_s,
                          double mb_per_s) {
  char line[256];
  int n = std::snprintf(line, sizeof(line),
                        "[%6.0fs] %9s values  %9s values/s  %7.1f MB/s  errors %llu", elapsed_s,
                        HumanCount(static_cast<double>(now.values)).c_str(),
                        HumanCount(values_per_s).c_str(), mb_per_s,
                        static_cast<unsigned long long>(now.errors));
  double fraction = -1;
  if (total_values_ > 0) fraction = static_cast<double>(now.values) / total_values_;
  if (duration_s_ > 0) fraction = std::max(fraction, elapsed_s / duration_s_);
  std::string text(line, static_cast<size_t>(std::max(n, 0)));
  if (fraction >= 0) {
    fraction = std::min(fraction, 1.0);
    const int filled = static_cast<int>(fraction * kBarWidth);
    text += "  [";
    text.append(static_cast<size_t>(filled), '#');
    text.append(static_cast<size_t>(kBarWidth - filled), ' ');
    n = std::snprintf(line, sizeof(line), "] %3.0f%%", fraction * 100);
    text.append(line, static_cast<size_t>(std::max(n, 0)));
  }
  if (mode_ == Mode::kTerminal) {
    std::fprintf(out_, "\r%s\033[K", text.c_str());
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
}

}  // namespace ingot::bench
