// Metrics: the node's counters, gauges and histograms in one registry, rendered as Prometheus text.
//
// Counting is cheap enough for hot paths: a Counter is striped over cache lines and a thread adds
// to its own stripe with a relaxed atomic add (no lock, no allocation). Register metrics once at
// start-up (registration takes a lock) and keep the returned reference; metrics live as long as the
// registry.
//
// Thread safety: all operations are thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ingot {

class Counter {
 public:
  void Add(std::uint64_t n = 1) noexcept {
    stripes_[StripeIndex()].value.fetch_add(n, std::memory_order_relaxed);
  }
  std::uint64_t Value() const noexcept;

 private:
  static constexpr int kStripes = 16;
  static unsigned StripeIndex() noexcept;
  struct alignas(64) Stripe {
    std::atomic<std::uint64_t> value{0};
  };
  std::array<Stripe, kStripes> stripes_;
};

class Gauge {
 public:
  void Set(std::int64_t v) noexcept { value_.store(v, std::memory_order_relaxed); }
  void Add(std::int64_t d) noexcept { value_.fetch_add(d, std::memory_order_relaxed); }
  std::int64_t Value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> value_{0};
};

// Fixed-bucket histogram (upper bounds in the metric's unit, e.g. seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v) noexcept;
  const std::vector<double>& bounds() const { return bounds_; }
  // Cumulative counts per bound (last entry = +Inf = total count) and the sum.
  void Snapshot(std::vector<std::uint64_t>* cumulative, double* sum) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // bounds_.size() + 1
  std::atomic<double> sum_{0.0};
};

// Exponential bounds: start, start*factor, ... (count values).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class MetricsRegistry {
 public:
  // `labels` is the rendered label set without braces, e.g. `reason="parse"`, or empty.
  Counter& AddCounter(std::string_view name, std::string_view help, std::string_view labels = "");
  Gauge& AddGauge(std::string_view name, std::string_view help, std::string_view labels = "");
  Histogram& AddHistogram(std::string_view name, std::string_view help,
                          std::vector<double> upper_bounds, std::string_view labels = "");
  // A gauge whose value is computed at render time (e.g. series count, RocksDB properties).
  void AddCallbackGauge(std::string_view name, std::string_view help,
                        std::function<double()> read, std::string_view labels = "");

  // Appends the Prometheus text exposition (version 0.0.4) of every metric to `out`.
  void RenderPrometheus(std::string* out) const;

  // The node-wide registry.
  static MetricsRegistry& Default();

 private:
  enum class Kind { kCounter, kGauge, kHistogram, kCallback };
  struct Entry {
    std::string name, help, labels;
    Kind kind;
    Counter* counter = nullptr;
    Gauge* gauge = nullptr;
    Histogram* histogram = nullptr;
    std::function<double()> read;
  };
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::deque<Counter> counters_;
  std::deque<Gauge> gauges_;
  std::deque<Histogram> histograms_;
};

}  // namespace ingot
