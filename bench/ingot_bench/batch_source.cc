#include "bench/ingot_bench/batch_source.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>

namespace ingot::bench {

GeneratedSource::GeneratedSource(const CpuWorkloadOptions& options, uint32_t host_begin,
                                 uint32_t host_end, size_t batch_lines)
    : workload_(options, host_begin, host_end),
      fields_(options.fields),
      batch_lines_(batch_lines) {
  producer_ = std::thread([this] { Produce(); });
}

GeneratedSource::~GeneratedSource() {
  Stop();
  producer_.join();
}

void GeneratedSource::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  changed_.notify_all();
}

void GeneratedSource::Produce() {
  for (;;) {
    Slot* slot;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] {
        const uint64_t in_use = produced_ - consumed_ + (holding_ ? 1 : 0);
        return stopped_ || in_use < kSlots;
      });
      if (stopped_) return;
      slot = &slots_[produced_ % kSlots];
    }
    // The consumer never touches a slot before produced_ covers it, so this runs unlocked.
    slot->bytes.Clear();
    const uint64_t new_series_lines_before = workload_.new_series_lines();
    slot->lines = workload_.Generate(batch_lines_, slot->bytes);
    slot->new_series_lines = workload_.new_series_lines() - new_series_lines_before;
    std::lock_guard<std::mutex> lock(mu_);
    if (slot->lines == 0) {
      done_ = true;
      changed_.notify_all();
      return;
    }
    ++produced_;
    changed_.notify_all();
  }
}

bool GeneratedSource::Next(Batch* batch) {
  std::unique_lock<std::mutex> lock(mu_);
  if (holding_) {
    holding_ = false;
    changed_.notify_all();
  }
  changed_.wait(lock, [this] { return stopped_ || done_ || produced_ > consumed_; });
  if (stopped_ || produced_ == consumed_) return false;
  const Slot& slot = slots_[consumed_ % kSlots];
  ++consumed_;
  holding_ = true;
  batch->bytes = slot.bytes.view();
  batch->lines = slot.lines;
  batch->values = slot.lines * fields_;
  batch->new_series = slot.new_series_lines * fields_;
  return true;
}

class RoundRobinDealer::Dealt final : public BatchSource {
 public:
  Dealt(RoundRobinDealer& dealer, uint32_t c) : dealer_(dealer), c_(c) {}
  bool Next(Batch* batch) override { return dealer_.Next(c_, &copy_, batch); }
  void Stop() override { dealer_.Stop(); }

 private:
  RoundRobinDealer& dealer_;
  const uint32_t c_;
  std::string copy_;
};

RoundRobinDealer::RoundRobinDealer(std::unique_ptr<BatchSource> inner, uint32_t n)
    : inner_(std::move(inner)), n_(n) {}

std::unique_ptr<BatchSource> RoundRobinDealer::Connection(uint32_t c) {
  return std::make_unique<Dealt>(*this, c);
}

bool RoundRobinDealer::Next(uint32_t c, std::string* copy, Batch* batch) {
  std::unique_lock<std::mutex> lock(mu_);
  turn_changed_.wait(lock, [&] { return exhausted_ || turn_ % n_ == c; });
  if (exhausted_) return false;
  Batch inner;
  if (!inner_->Next(&inner)) {
    exhausted_ = true;
    turn_changed_.notify_all();
    return false;
  }
  copy->assign(inner.bytes);
  *batch = inner;
  batch->bytes = *copy;
  ++turn_;
  turn_changed_.notify_all();
  return true;
}

void RoundRobinDealer::Stop() {
  inner_->Stop();
  std::lock_guard<std::mutex> lock(mu_);
  exhausted_ = true;
  turn_changed_.notify_all();
}

uint64_t CountFields(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i == line.size() || line[i] == '#') return 0;
  // Measurement and tags end at the first unescaped space.
  for (; i < line.size() && line[i] != ' '; ++i) {
    if (line[i] == '\\') ++i;
  }
  if (i >= line.size()) return 0;
  uint64_t fields = 1;
  bool quoted = false;
  for (++i; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\\') {
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && c == ',') {
      ++fields;
    } else if (!quoted && c == ' ') {
      break;
    }
  }
  return fields;
}

namespace {

bool LastTokenAsInt(std::string_view line, int64_t* value) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
  const size_t space = line.rfind(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view token = line.substr(space + 1);
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), *value);
  return ec == std::errc() && end == token.data() + token.size();
}

}  // namespace

void SplitLineProtocol(std::string bytes, size_t batch_lines, LineProtocolFile* file) {
  *file = LineProtocolFile();
  file->bytes = std::move(bytes);
  const std::string_view all = file->bytes;
  LineProtocolFile::Span span;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t end = all.find('\n', pos);
    const bool last = end == std::string_view::npos;
    if (last) end = all.size();
    const std::string_view line = all.substr(pos, end - pos);
    const uint64_t fields = CountFields(line);
    if (fields > 0) {
      if (span.lines == 0) span.offset = pos;
      // A last line without newline is sent as it is; servers accept an unterminated final line.
      span.size = (last ? end : end + 1) - span.offset;
      ++span.lines;
      span.values += fields;
      int64_t ts_ns;
      if (LastTokenAsInt(line, &ts_ns)) {
        if (!file->has_timestamps || ts_ns < file->min_ts_ns) file->min_ts_ns = ts_ns;
        if (!file->has_timestamps || ts_ns > file->max_ts_ns) file->max_ts_ns = ts_ns;
        file->has_timestamps = true;
      }
    }
    // Blank and comment lines end a batch early only by being skipped: a batch is contiguous.
    if ((fields == 0 && span.lines > 0) || span.lines == batch_lines) {
      file->lines += span.lines;
      file->values += span.values;
      file->batches.push_back(span);
      span = LineProtocolFile::Span();
    }
    pos = end + 1;
  }
  if (span.lines > 0) {
    file->lines += span.lines;
    file->values += span.values;
    file->batches.push_back(span);
  }
}

Status LoadLineProtocolFile(const std::string& path, size_t batch_lines, LineProtocolFile* file) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot open " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return Status::IOError("cannot read " + path);
  SplitLineProtocol(std::move(bytes).str(), batch_lines, file);
  if (file->lines == 0) return Status::InvalidArgument(path + ": no line-protocol lines");
  return Status::OK();
}

ReplaySource::ReplaySource(const LineProtocolFile& file, size_t first, size_t stride)
    : file_(file), next_(first), stride_(stride) {}

bool ReplaySource::Next(Batch* batch) {
  if (stopped_.load(std::memory_order_relaxed) || next_ >= file_.batches.size()) return false;
  const LineProtocolFile::Span& span = file_.batches[next_];
  next_ += stride_;
  batch->bytes = std::string_view(file_.bytes).substr(span.offset, span.size);
  batch->lines = span.lines;
  batch->values = span.values;
  batch->new_series = 0;
  return true;
}

}  // namespace ingot::bench
