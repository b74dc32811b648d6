#include "config/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <memory>
#include <thread>

namespace ingot {

unsigned Counter::StripeIndex() noexcept {
  // Threads keep their stripe for life; hashing the thread id spreads them without registration.
  static thread_local const unsigned index = static_cast<unsigned>(
      std::hash<std::thread::id>()(std::this_thread::get_id()) % kStripes);
  return index;
}

std::uint64_t Counter::Value() const noexcept {
  std::uint64_t total = 0;
  for (const Stripe& s : stripes_) total += s.value.load(std::memory_order_relaxed);
  return total;
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)),
      counts_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::Observe(double v) noexcept {
  const std::size_t i = static_cast<std::size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  double old = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(old, old + v, std::memory_order_relaxed)) {
  }
}

void Histogram::Snapshot(std::vector<std::uint64_t>* cumulative, double* sum) const {
  cumulative->clear();
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    cumulative->push_back(running);
  }
  *sum = sum_.load(std::memory_order_relaxed);
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) out.push_back(v);
  return out;
}

Counter& MetricsRegistry::AddCounter(std::string_view name, std::string_view help,
                                     std::string_view labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Counter& c = counters_.emplace_back();
  entries_.push_back({std::string(name), std::string(help), std::string(labels), Kind::kCounter,
                      &c, nullptr, nullptr, {}});
  return c;
}

Gauge& MetricsRegistry::AddGauge(std::string_view name, std::string_view help,
                                 std::string_view labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Gauge& g = gauges_.emplace_back();
  entries_.push_back({std::string(name), std::string(help), std::string(labels), Kind::kGauge,
                      nullptr, &g, nullptr, {}});
  return g;
}

Histogram& MetricsRegistry::AddHistogram(std::string_view name, std::string_view help,
                                         std::vector<double> upper_bounds,
                                         std::string_view labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Histogram& h = histograms_.emplace_back(std::move(upper_bounds));
  entries_.push_back({std::string(name), std::string(help), std::string(labels),
                      Kind::kHistogram, nullptr, nullptr, &h, {}});
  return h;
}

void MetricsRegistry::AddCallbackGauge(std::string_view name, std::string_view help,
                                       std::function<double()> read, std::string_view labels) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back({std::string(name), std::string(help), std::string(labels), Kind::kCallback,
                      nullptr, nullptr, nullptr, std::move(read)});
}

namespace {

void AppendNumber(std::string* out, double v) {
  if (std::isnan(v)) {
    *out += "NaN";
  } else if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, end);
  }
}

void AppendSample(std::string* out, const std::string& name, std::string_view labels,
                  std::string_view extra_label, double v) {
  *out += name;
  if (!labels.empty() || !extra_label.empty()) {
    *out += '{';
    *out += labels;
    if (!labels.empty() && !extra_label.empty()) *out += ',';
    *out += extra_label;
    *out += '}';
  }
  *out += ' ';
  AppendNumber(out, v);
  *out += '\n';
}

}  // namespace

void MetricsRegistry::RenderPrometheus(std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  // Group samples of one name under one HELP/TYPE header, in registration order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Entry*>> by_name;
  for (const Entry& e : entries_) {
    auto& list = by_name[e.name];
    if (list.empty()) order.push_back(e.name);
    list.push_back(&e);
  }
  std::vector<std::uint64_t> cumulative;
  for (const std::string& name : order) {
    const auto& list = by_name[name];
    const Entry& first = *list.front();
    const char* type = first.kind == Kind::kCounter     ? "counter"
                       : first.kind == Kind::kHistogram ? "histogram"
                                                        : "gauge";
    *out += "# HELP " + name + " " + first.help + "\n# TYPE " + name + " " + type + "\n";
    for (const Entry* e : list) {
      switch (e->kind) {
        case Kind::kCounter:
          AppendSample(out, name, e->labels, "", static_cast<double>(e->counter->Value()));
          break;
        case Kind::kGauge:
          AppendSample(out, name, e->labels, "", static_cast<double>(e->gauge->Value()));
          break;
        case Kind::kCallback:
          AppendSample(out, name, e->labels, "", e->read());
          break;
        case Kind::kHistogram: {
          double sum = 0;
          e->histogram->Snapshot(&cumulative, &sum);
          const auto& bounds = e->histogram->bounds();
          for (std::size_t i = 0; i <= bounds.size(); ++i) {
            std::string le = "le=\"";
            if (i < bounds.size()) {
              AppendNumber(&le, bounds[i]);
            } else {
              le += "+Inf";
            }
            le += '"';
            AppendSample(out, name + "_bucket", e->labels, le,
                         static_cast<double>(cumulative[i]));
          }
          AppendSample(out, name + "_sum", e->labels, "", sum);
          AppendSample(out, name + "_count", e->labels, "",
                       static_cast<double>(cumulative.back()));
          break;
        }
      }
    }
  }
}

MetricsRegistry& MetricsRegistry::Default() {
  static MetricsRegistry registry;
  return registry;
}

}  // namespace ingot
