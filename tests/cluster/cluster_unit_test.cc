// The cluster's parts that run in one process, without NATS: partition hashing and ownership, the
// log message header, applied positions, the write path from LineRouting through a log held in
// memory into an Applier and a real Storage (read back through the query path and compared
// exactly), and membership over a key-value bucket held in memory.
//
// MemoryLog and MemoryKv below implement cluster/log.h as its comments ask, so that what these
// tests find is about the cluster code and not about NATS (tests/cluster/nats_log_test.cc covers
// the real log).
#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "chunk/storage.h"
#include "cluster/applier.h"
#include "cluster/batch_format.h"
#include "cluster/line_router.h"
#include "cluster/log.h"
#include "cluster/membership.h"
#include "cluster/partition.h"
#include "cluster/positions.h"
#include "config/clock.h"
#include "config/logging.h"
#include "config/metrics.h"
#include "config/options.h"
#include "ingest/line_ingester.h"
#include "ingest/line_parser.h"
#include "ingest/remote_write_handler.h"
#include "ingest/shard_set.h"
#include "query/selector.h"
#include "query/series_fanout.h"
#include "tests/ingest/ingest_test_util.h"
#include "tests/ingest/remote_write_test_util.h"
#include "tests/support/temp_dir.h"

namespace ingot::cluster {
namespace {

using namespace std::string_literals;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Polls `condition` every few milliseconds until it holds or `timeout` passed; whether it held.
template <typename Condition>
bool Eventually(Condition condition, milliseconds timeout = milliseconds(5000)) {
  const auto deadline = steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
}

// A counter of the default registry (0 before its first use: the cluster's metrics are
// registered lazily).
double CounterValue(const std::string& name) {
  std::string text;
  MetricsRegistry::Default().RenderPrometheus(&text);
  const double v = ingest::testutil::MetricValue(text, name);
  return v < 0 ? 0 : v;
}

// ------------------------------------------------------------------------------------------------
// The log and the bucket, in memory.

// Partitions as sequences of messages, a dedup id stored once, readers that block on a condition
// variable. Publish stores at once (as an asynchronous publish reaches the server before its
// Flush waits for the acknowledgement).
class MemoryLog final : public Log {
 public:
  explicit MemoryLog(std::uint32_t partitions) : partitions_(partitions) {}

  Status EnsureLayout(const LogLayout& layout) override {
    if (layout.partitions != partitions_.size()) {
      return Status::InvalidArgument("cluster.partitions differs from the log's");
    }
    return Status::OK();
  }

  std::unique_ptr<LogWriter> NewWriter() override { return std::make_unique<Writer>(*this); }

  Status OpenReader(PartitionId p, LogSeq start, std::unique_ptr<LogReader>* out) override {
    if (p >= partitions_.size() || start < 1) {
      return Status::InvalidArgument("no partition " + std::to_string(p) + " or start 0");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (start < partitions_[p].first) {
        return Status::NotFound("message " + std::to_string(start) + " is no longer in the log");
      }
    }
    *out = std::make_unique<Reader>(*this, p, start);
    return Status::OK();
  }

  Status Bounds(PartitionId p, LogSeq* first, LogSeq* last) override {
    if (p >= partitions_.size()) return Status::InvalidArgument("no such partition");
    std::lock_guard<std::mutex> lock(mu_);
    const Partition& part = partitions_[p];
    if (part.messages.empty()) {
      *first = *last = 0;
    } else {
      *first = part.first;
      *last = part.first + part.messages.size() - 1;
    }
    return Status::OK();
  }

  // Stores `payload` at the end of `p` unless a message of `dedup_id` was stored before: the
  // sequence it is (or was) stored at.
  LogSeq Append(PartitionId p, std::string_view dedup_id, std::string_view payload) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = ids_.try_emplace(std::string(dedup_id), 0);
    if (!inserted) {
      ++duplicates_;
      return it->second;
    }
    Partition& part = partitions_[p];
    part.messages.emplace_back(payload);
    it->second = part.first + part.messages.size() - 1;
    ids_in_order_.emplace_back(dedup_id);
    cv_.notify_all();
    return it->second;
  }

  // Retention: drops `p`'s messages before `seq`.
  void DropBefore(PartitionId p, LogSeq seq) {
    std::lock_guard<std::mutex> lock(mu_);
    Partition& part = partitions_[p];
    while (part.first < seq && !part.messages.empty()) {
      part.messages.pop_front();
      ++part.first;
    }
  }

  // Every message of `p` still held, in order.
  std::vector<std::string> Messages(PartitionId p) const {
    std::lock_guard<std::mutex> lock(mu_);
    return {partitions_[p].messages.begin(), partitions_[p].messages.end()};
  }
  std::size_t TotalMessages() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::size_t n = 0;
    for (const Partition& part : partitions_) n += part.messages.size();
    return n;
  }
  std::vector<std::string> IdsInOrder() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_in_order_;
  }
  std::size_t duplicates() const {
    std::lock_guard<std::mutex> lock(mu_);
    return duplicates_;
  }

  // Every message is published twice under its id, as a writer does when an acknowledgement
  // was lost and it retries.
  void set_publish_twice(bool on) { publish_twice_ = on; }
  // Flush fails as a writer does when the log could not store its messages in time.
  void set_unavailable(bool on) { unavailable_ = on; }

 private:
  struct Partition {
    LogSeq first = 1;  // the sequence of messages.front()
    std::deque<std::string> messages;
  };

  class Writer final : public LogWriter {
   public:
    explicit Writer(MemoryLog& log) : log_(log) {}
    void Publish(PartitionId p, std::string_view dedup_id, std::string_view payload) override {
      if (p >= log_.partitions_.size()) {
        bad_partition_ = true;
        return;
      }
      if (log_.unavailable_) {
        failed_ = true;
        return;
      }
      log_.Append(p, dedup_id, payload);
      if (log_.publish_twice_) log_.Append(p, dedup_id, payload);
    }
    Status Flush(int /*timeout_ms*/) override {
      Status st;
      if (bad_partition_) st = Status::InvalidArgument("a message for a partition outside the log");
      if (failed_ || log_.unavailable_) st = Status::IOError("the log is unavailable");
      bad_partition_ = failed_ = false;
      return st;
    }

   private:
    MemoryLog& log_;
    bool bad_partition_ = false;
    bool failed_ = false;
  };

  class Reader final : public LogReader {
   public:
    Reader(MemoryLog& log, PartitionId p, LogSeq start) : log_(log), p_(p), next_(start) {}
    Status Next(std::size_t max_messages, int wait_ms, std::vector<LogMessage>* out) override {
      out->clear();
      held_.clear();
      LogSeq last = 0;
      std::vector<LogSeq> seqs;
      {
        std::unique_lock<std::mutex> lock(log_.mu_);
        const Partition& part = log_.partitions_[p_];
        log_.cv_.wait_for(lock, milliseconds(wait_ms),
                          [&] { return next_ < part.first + part.messages.size(); });
        if (next_ < part.first) {
          return Status::NotFound("message " + std::to_string(next_) + " is no longer in the log");
        }
        last = part.first + part.messages.size() - 1;
        while (held_.size() < max_messages && next_ <= last) {
          held_.push_back(part.messages[next_ - part.first]);
          seqs.push_back(next_++);
        }
      }
      // Payloads point into held_, which stays until the next call.
      for (std::size_t i = 0; i < held_.size(); ++i) {
        out->push_back(LogMessage{seqs[i], last - seqs[i], held_[i]});
      }
      return Status::OK();
    }

   private:
    MemoryLog& log_;
    const PartitionId p_;
    LogSeq next_;
    std::vector<std::string> held_;
  };

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Partition> partitions_;
  std::map<std::string, LogSeq> ids_;
  std::vector<std::string> ids_in_order_;
  std::size_t duplicates_ = 0;
  std::atomic<bool> publish_twice_{false};
  std::atomic<bool> unavailable_{false};
};

// A bucket with revisions. Each watch has a thread of its own calling its function with the
// entries present when it started, then with every change, in revision order (cluster/log.h);
// destroying the handle stops and joins that thread.
class MemoryKv final : public Coordination {
 public:
  ~MemoryKv() override { EXPECT_TRUE(watchers_.empty()) << "a watch outlived its bucket"; }

  Status Put(std::string_view key, std::string_view value, std::uint64_t* revision) override {
    std::lock_guard<std::mutex> lock(mu_);
    KvEntry entry{std::string(key), std::string(value), ++revision_, false};
    entries_[entry.key] = entry;
    Deliver(entry);
    *revision = entry.revision;
    return Status::OK();
  }

  Status Delete(std::string_view key) override {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(std::string(key));
    Deliver(KvEntry{std::string(key), "", ++revision_, true});
    return Status::OK();
  }

  Status Watch(std::function<void(const KvEntry&)> fn,
               std::unique_ptr<WatchHandle>* handle) override {
    auto watcher = std::make_shared<Watcher>();
    watcher->fn = std::move(fn);
    {
      std::lock_guard<std::mutex> lock(mu_);
      watcher->ordinal = next_ordinal_++;
      std::vector<KvEntry> current;
      for (const auto& [key, entry] : entries_) current.push_back(entry);
      std::sort(current.begin(), current.end(),
                [](const KvEntry& a, const KvEntry& b) { return a.revision < b.revision; });
      watcher->queue.assign(current.begin(), current.end());
      watchers_.push_back(watcher);
    }
    watcher->thread = std::thread([w = watcher.get()] { w->Run(); });
    *handle = std::make_unique<Handle>(*this, watcher);
    return Status::OK();
  }

  bool Has(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.count(key) != 0;
  }

  // Changes stop reaching watch number `ordinal` (in the order the watches started), as when
  // its connection is cut; with `cut` false they reach it again (those in between are lost).
  void CutWatch(int ordinal, bool cut) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& w : watchers_) {
      if (w->ordinal == ordinal) w->cut = cut;
    }
  }

 private:
  struct Watcher {
    std::function<void(const KvEntry&)> fn;
    int ordinal = 0;
    bool cut = false;  // guarded by MemoryKv::mu_
    std::mutex mu;
    std::condition_variable cv;
    std::deque<KvEntry> queue;
    bool stop = false;
    std::thread thread;

    void Run() {
      for (;;) {
        KvEntry entry;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [this] { return stop || !queue.empty(); });
          if (stop) return;
          entry = std::move(queue.front());
          queue.pop_front();
        }
        fn(entry);
      }
    }
  };

  class Handle final : public WatchHandle {
   public:
    Handle(MemoryKv& kv, std::shared_ptr<Watcher> watcher)
        : kv_(kv), watcher_(std::move(watcher)) {}
    ~Handle() override {
      {
        std::lock_guard<std::mutex> lock(kv_.mu_);
        auto& all = kv_.watchers_;
        all.erase(std::remove(all.begin(), all.end(), watcher_), all.end());
      }
      {
        std::lock_guard<std::mutex> lock(watcher_->mu);
        watcher_->stop = true;
      }
      watcher_->cv.notify_all();
      watcher_->thread.join();
    }

   private:
    MemoryKv& kv_;
    std::shared_ptr<Watcher> watcher_;
  };

  // Called with mu_ held, so that every watcher gets changes in revision order.
  void Deliver(const KvEntry& entry) {
    for (const auto& w : watchers_) {
      if (w->cut) continue;
      {
        std::lock_guard<std::mutex> lock(w->mu);
        w->queue.push_back(entry);
      }
      w->cv.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::uint64_t revision_ = 0;
  std::map<std::string, KvEntry> entries_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  int next_ordinal_ = 0;
};

// ------------------------------------------------------------------------------------------------
// Partitions.

// The identity of the line `text`, through a fresh scratch.
std::string IdentityOf(std::string_view text) {
  ingest::LineParser parser;
  ingest::ParsedLine line;
  ingest::ParseError error;
  EXPECT_EQ(parser.Parse(text, 0, &line, &error), ingest::ParseResult::kPoint) << text;
  std::vector<std::pair<std::string, std::string>> scratch;
  std::string identity;
  LineIdentity(line, &scratch, &identity);
  return identity;
}

TEST(PartitionTest, IdentityIsTheUnescapedMeasurementThenTheSortedTags) {
  EXPECT_EQ(IdentityOf("cpu usage=1"), "cpu\0"s);
  EXPECT_EQ(IdentityOf("cpu,host=a,region=eu usage=1 5"), "cpu\0host\0a\0region\0eu\0"s);
  // Neither the tag order nor the fields nor the timestamp matter.
  EXPECT_EQ(IdentityOf("cpu,b=2,a=1 v=1"), IdentityOf("cpu,a=1,b=2 v=1"));
  EXPECT_EQ(IdentityOf("cpu,b=2,a=1 v=1"), "cpu\0a\0001\0b\0002\0"s);
  EXPECT_EQ(IdentityOf("cpu,a=1 x=1i 1700000000"), IdentityOf("cpu,a=1 y=\"s\",z=t"));
  // Escapes are undone: the same series whatever the spelling.
  EXPECT_EQ(IdentityOf(R"(my\ cpu,host\ name=a\,b\ c,k\=x=v\=w f=1)"),
            "my cpu\0host name\0a,b c\0k=x\0v=w\0"s);
  EXPECT_EQ(IdentityOf(R"(a\,b v=1)"), "a,b\0"s);
  // The separators keep different series apart even when their bytes run together.
  EXPECT_NE(IdentityOf("cpu,ab=1 v=1"), IdentityOf("cpu,a=b1 v=1"));
  EXPECT_NE(IdentityOf("cpuhost v=1"), IdentityOf("cpu,host=x v=1"));
}

// A remote-write label set hashes in the same shape: its metric name where a line has its
// measurement, so a line series and a label set with the same name and tags share a partition.
TEST(PartitionTest, LabelSetIdentityHasTheLineIdentitysShape) {
  const std::vector<TagView> labels = {{"host", "a"}, {"region", "eu"}};
  std::string identity = "stale";
  LabelSetIdentity("cpu", labels, &identity);
  EXPECT_EQ(identity, "cpu\0host\0a\0region\0eu\0"s);
  EXPECT_EQ(identity, IdentityOf("cpu,region=eu,host=a usage=1"));
  LabelSetIdentity("up", {}, &identity);
  EXPECT_EQ(identity, "up\0"s);
}

TEST(PartitionTest, IdentityScratchIsReusedAcrossLines) {
  ingest::LineParser parser;
  ingest::ParsedLine line;
  ingest::ParseError error;
  std::vector<std::pair<std::string, std::string>> scratch;
  std::string identity;
  ASSERT_EQ(parser.Parse("m,c=3,b=2,a=1 v=1", 0, &line, &error), ingest::ParseResult::kPoint);
  LineIdentity(line, &scratch, &identity);
  EXPECT_EQ(identity, "m\0a\0001\0b\0002\0c\0003\0"s);
  // Fewer tags than the scratch holds: none of the previous line's is left over.
  ASSERT_EQ(parser.Parse("n,z=9 v=1", 0, &line, &error), ingest::ParseResult::kPoint);
  LineIdentity(line, &scratch, &identity);
  EXPECT_EQ(identity, "n\0z\0009\0"s);
  ASSERT_EQ(parser.Parse("o v=1", 0, &line, &error), ingest::ParseResult::kPoint);
  LineIdentity(line, &scratch, &identity);
  EXPECT_EQ(identity, "o\0"s);
}

// Pinned: the partition of a series is persisted in the log and in which node holds which data,
// so a change of seed or hashed bytes must show up here as a format change.
TEST(PartitionTest, GoldenPartitions) {
  struct Case {
    std::string identity;
    std::uint32_t of_16;
    std::uint32_t of_256;
    std::uint32_t of_max;  // modulo 2^32 - 1: most of the hash's bits
  };
  const Case cases[] = {
      {""s, 14, 94, 4107793088u},
      {"cpu\0"s, 13, 29, 2347864310u},
      {"cpu\0host\0a\0region\0eu\0"s, 15, 239, 1932295883u},
      {"my cpu\0host name\0a,b c\0"s, 12, 108, 2690300138u},
      {"http_requests_total\0instance\0a\0job\0api\0"s, 10, 106, 1996522865u},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PartitionOfIdentity(c.identity, 16), c.of_16) << c.identity;
    EXPECT_EQ(PartitionOfIdentity(c.identity, 256), c.of_256) << c.identity;
    EXPECT_EQ(PartitionOfIdentity(c.identity, 0xFFFFFFFFu), c.of_max) << c.identity;
    EXPECT_EQ(PartitionOfIdentity(c.identity, 1), 0u);
  }
  // A line's partition is its identity's.
  EXPECT_EQ(PartitionOfIdentity(IdentityOf("cpu,region=eu,host=a usage=1 5"), 0xFFFFFFFFu),
            cases[2].of_max);
}

std::vector<std::string> NodeIds(int n) {
  std::vector<std::string> ids;
  for (int i = 1; i <= n; ++i) ids.push_back("node-" + std::to_string(i));
  return ids;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(OwnersOfTest, MinOfReplicationAndNodesDistinctOwnersWhateverTheOrder) {
  for (int n = 0; n <= 8; ++n) {
    const std::vector<std::string> nodes = NodeIds(n);
    std::vector<std::string> reversed(nodes.rbegin(), nodes.rend());
    std::vector<std::string> rotated = nodes;
    if (!rotated.empty()) std::rotate(rotated.begin(), rotated.begin() + n / 2, rotated.end());
    for (std::uint32_t r = 0; r <= 4; ++r) {
      for (PartitionId p = 0; p < 256; ++p) {
        const std::vector<std::string> owners = OwnersOf(p, nodes, r);
        ASSERT_EQ(owners.size(), std::min<std::size_t>(r, nodes.size())) << n << " " << r;
        EXPECT_EQ(std::set<std::string>(owners.begin(), owners.end()).size(), owners.size());
        for (const std::string& o : owners) EXPECT_TRUE(Contains(nodes, o)) << o;
        // Every node computes the same owners, in the same order, from its own list.
        EXPECT_EQ(OwnersOf(p, nodes, r), owners);
        EXPECT_EQ(OwnersOf(p, reversed, r), owners);
        EXPECT_EQ(OwnersOf(p, rotated, r), owners);
        // Weight order: fewer replicas are a prefix of more.
        if (r > 0) {
          const std::vector<std::string> fewer = OwnersOf(p, nodes, r - 1);
          EXPECT_TRUE(std::equal(fewer.begin(), fewer.end(), owners.begin()));
        }
      }
    }
  }
}

TEST(OwnersOfTest, AddingANodeMovesOnlyThePartitionsItWins) {
  constexpr PartitionId kP = 256;
  for (std::uint32_t r = 1; r <= 3; ++r) {
    for (int n = 3; n < 8; ++n) {
      const std::vector<std::string> before = NodeIds(n);
      const std::vector<std::string> after = NodeIds(n + 1);
      const std::string& added = after.back();
      int moved = 0;
      for (PartitionId p = 0; p < kP; ++p) {
        const std::vector<std::string> old_owners = OwnersOf(p, before, r);
        const std::vector<std::string> new_owners = OwnersOf(p, after, r);
        if (!Contains(new_owners, added)) {
          EXPECT_EQ(new_owners, old_owners) << "partition " << p << " n " << n << " r " << r;
          continue;
        }
        ++moved;
        // The new node displaced exactly one owner, the lowest; the others stay, in order.
        std::vector<std::string> kept = new_owners;
        kept.erase(std::find(kept.begin(), kept.end(), added));
        EXPECT_EQ(kept, std::vector<std::string>(old_owners.begin(), old_owners.end() - 1))
            << "partition " << p << " n " << n << " r " << r;
      }
      // About r/(n+1) of the partitions.
      EXPECT_GT(moved, 0) << n << " " << r;
      EXPECT_LT(moved, static_cast<int>(kP * r / (n + 1) * 2)) << n << " " << r;
    }
  }
}

TEST(OwnersOfTest, RemovingANodeMovesOnlyThePartitionsItHeld) {
  constexpr PartitionId kP = 256;
  for (std::uint32_t r = 1; r <= 3; ++r) {
    for (int n = 3; n <= 8; ++n) {
      const std::vector<std::string> nodes = NodeIds(n);
      for (const std::string& removed : nodes) {
        std::vector<std::string> rest = nodes;
        rest.erase(std::find(rest.begin(), rest.end(), removed));
        for (PartitionId p = 0; p < kP; ++p) {
          const std::vector<std::string> old_owners = OwnersOf(p, nodes, r);
          const std::vector<std::string> new_owners = OwnersOf(p, rest, r);
          if (!Contains(old_owners, removed)) {
            EXPECT_EQ(new_owners, old_owners) << "partition " << p << " without " << removed;
            continue;
          }
          // The remaining owners stay, in order, and the next node by weight joins them.
          std::vector<std::string> kept = old_owners;
          kept.erase(std::find(kept.begin(), kept.end(), removed));
          ASSERT_EQ(new_owners.size(), std::min<std::size_t>(r, rest.size()));
          EXPECT_TRUE(std::equal(kept.begin(), kept.end(), new_owners.begin()))
              << "partition " << p << " without " << removed;
        }
      }
    }
  }
}

TEST(OwnersOfTest, SpreadIsRoughlyEven) {
  constexpr PartitionId kP = 256;
  for (std::uint32_t r = 1; r <= 3; ++r) {
    for (int n = 3; n <= 8; ++n) {
      const std::vector<std::string> nodes = NodeIds(n);
      std::map<std::string, int> owned;
      for (PartitionId p = 0; p < kP; ++p) {
        for (const std::string& o : OwnersOf(p, nodes, r)) ++owned[o];
      }
      const double fair = static_cast<double>(kP) * r / n;
      for (const std::string& node : nodes) {
        EXPECT_GE(owned[node], 0.5 * fair) << node << " of " << n << ", r " << r;
        EXPECT_LE(owned[node], 1.5 * fair) << node << " of " << n << ", r " << r;
      }
    }
  }
}

// Nodes of different versions must choose the same owners.
TEST(OwnersOfTest, GoldenOwners) {
  const std::vector<std::string> nodes = {"a", "b", "c", "d"};
  EXPECT_EQ(OwnersOf(0, nodes, 2), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(OwnersOf(1, nodes, 2), (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(OwnersOf(7, nodes, 3), (std::vector<std::string>{"d", "c", "a"}));
}

// ------------------------------------------------------------------------------------------------
// The message header.

std::string MessageOf(const BatchHeader& header, std::string_view body) {
  std::string message(kBatchHeaderBytes, '\0');
  message.append(body);
  WriteBatchHeader(header, &message);
  return message;
}

// ReadBatch over an exact-size heap copy of `bytes`, so that a read past the end is an
// AddressSanitizer error rather than a read of the string's spare capacity.
Status ReadCopy(std::string_view bytes, BatchHeader* header, std::string* body) {
  std::unique_ptr<char[]> copy(new char[bytes.size()]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  std::string_view view;
  const Status st = ReadBatch(std::string_view(copy.get(), bytes.size()), header, &view);
  if (st.ok()) body->assign(view);
  return st;
}

TEST(BatchFormatTest, HeaderRoundTrips) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::int64_t stamps[] = {0, 1, -1, 1'700'000'000'123'456'789, kMin, kMax};
  for (std::uint8_t kind : {kBatchKindLineProtocol, kBatchKindRemoteWrite}) {
    for (std::uint8_t precision = 0; precision <= kMaxPrecision; ++precision) {
      for (std::uint8_t flags : {std::uint8_t{0}, kBatchFlagZstd}) {
        for (std::int64_t ts : stamps) {
          const std::string body = "m v=1 1\n";
          const std::string message = MessageOf(BatchHeader{kind, precision, flags, ts}, body);
          ASSERT_EQ(message.size(), kBatchHeaderBytes + body.size());
          BatchHeader got;
          std::string got_body;
          ASSERT_TRUE(ReadCopy(message, &got, &got_body).ok());
          EXPECT_EQ(got.kind, kind);
          EXPECT_EQ(got.precision, precision);
          EXPECT_EQ(got.flags, flags);
          EXPECT_EQ(got.accept_ts_ns, ts);
          EXPECT_EQ(got_body, body);
        }
      }
    }
  }
  // An empty body is a valid message.
  BatchHeader got;
  std::string got_body = "x";
  ASSERT_TRUE(ReadCopy(MessageOf(BatchHeader{}, ""), &got, &got_body).ok());
  EXPECT_EQ(got_body, "");
}

// Pinned bytes: messages stay in the log for cluster.stream_max_age across upgrades.
TEST(BatchFormatTest, GoldenBytes) {
  const std::string message =
      MessageOf(BatchHeader{kBatchKindRemoteWrite, 3, kBatchFlagZstd, 0x0102030405060708}, "b");
  EXPECT_EQ(message, "IGB1\x02\x03\x01\x00\x08\x07\x06\x05\x04\x03\x02\x01"s + "b");
}

TEST(BatchFormatTest, EveryTruncationIsCorruptionOrTheShorterBody) {
  const std::string message =
      MessageOf(BatchHeader{kBatchKindLineProtocol, 2, 0, 1'700'000'000'000'000'000}, "m v=1 1\n");
  for (std::size_t n = 0; n <= message.size(); ++n) {
    BatchHeader header;
    std::string body;
    const Status st = ReadCopy(std::string_view(message).substr(0, n), &header, &body);
    if (n < kBatchHeaderBytes) {
      EXPECT_TRUE(st.IsCorruption()) << n << ": " << st.ToString();
      EXPECT_NE(st.ToString().find(std::to_string(n) + " bytes"), std::string::npos)
          << st.ToString();
    } else {
      ASSERT_TRUE(st.ok()) << n << ": " << st.ToString();
      EXPECT_EQ(body, message.substr(kBatchHeaderBytes, n - kBatchHeaderBytes));
    }
  }
}

TEST(BatchFormatTest, EveryHeaderBitFlipIsCorruptionOrAValidDecode) {
  const BatchHeader original{kBatchKindLineProtocol, 3, 0, 1'700'000'000'123'456'789};
  const std::string message = MessageOf(original, "m v=1 1\n");
  for (std::size_t bit = 0; bit < kBatchHeaderBytes * 8; ++bit) {
    std::string damaged = message;
    damaged[bit / 8] = static_cast<char>(damaged[bit / 8] ^ (1 << (bit % 8)));
    BatchHeader header;
    std::string body;
    const Status st = ReadCopy(damaged, &header, &body);
    // What the format allows, decided independently of ReadBatch.
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(damaged[i]); };
    const bool valid = damaged.compare(0, 4, "IGB1") == 0 &&
                       (byte(4) == kBatchKindLineProtocol || byte(4) == kBatchKindRemoteWrite) &&
                       byte(5) <= kMaxPrecision && (byte(6) & ~kBatchFlagZstd) == 0 && byte(7) == 0;
    if (!valid) {
      EXPECT_TRUE(st.IsCorruption()) << "bit " << bit << ": " << st.ToString();
      continue;
    }
    ASSERT_TRUE(st.ok()) << "bit " << bit << ": " << st.ToString();
    EXPECT_EQ(header.kind, byte(4));
    EXPECT_EQ(header.precision, byte(5));
    EXPECT_EQ(header.flags, byte(6));
    const std::int64_t expected_ts =
        bit >= 64 ? static_cast<std::int64_t>(static_cast<std::uint64_t>(original.accept_ts_ns) ^
                                              (std::uint64_t{1} << (bit - 64)))
                  : original.accept_ts_ns;
    EXPECT_EQ(header.accept_ts_ns, expected_ts) << "bit " << bit;
    EXPECT_EQ(body, "m v=1 1\n");
  }
}

TEST(BatchFormatTest, UnknownKindFlagsPrecisionAndReservedAreRejected) {
  const std::string good = MessageOf(BatchHeader{}, "m v=1 1\n");
  struct Case {
    std::size_t offset;
    std::uint8_t value;
    const char* named;  // in the message
  };
  const Case cases[] = {{4, 0, "kind 0"},      {4, 3, "kind 3"},          {4, 255, "kind 255"},
                        {5, 6, "precision 6"}, {5, 255, "precision 255"}, {6, 2, "flags 2"},
                        {6, 3, "flags 3"},     {6, 0x80, "flags 128"},    {7, 1, "reserved"},
                        {0, 'i', "magic"},     {3, '2', "magic"}};
  for (const Case& c : cases) {
    std::string damaged = good;
    damaged[c.offset] = static_cast<char>(c.value);
    BatchHeader header;
    std::string body;
    const Status st = ReadCopy(damaged, &header, &body);
    EXPECT_TRUE(st.IsCorruption()) << c.named << ": " << st.ToString();
    EXPECT_NE(st.ToString().find(c.named), std::string::npos) << st.ToString();
  }
}

// ------------------------------------------------------------------------------------------------
// Positions.

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::unique_ptr<Positions> OpenPositions(const std::string& dir) {
  std::unique_ptr<Positions> positions;
  const Status st = Positions::Open(dir, &positions);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return positions;
}

TEST(PositionsTest, MissingFileIsAllZeros) {
  testing::TempDir dir;
  auto positions = OpenPositions(dir.path() + "/data");
  ASSERT_NE(positions, nullptr);
  for (PartitionId p : {0u, 1u, 255u, 4'000'000'000u}) EXPECT_EQ(positions->Get(p), 0u);
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() + "/data/cluster"));
}

TEST(PositionsTest, SetGetAndTheFileTrailsByOnePersist) {
  testing::TempDir dir;
  auto positions = OpenPositions(dir.path());
  ASSERT_NE(positions, nullptr);
  positions->Set(0, 10);
  positions->Set(3, 7);
  positions->Set(0, 11);  // the last Set counts
  EXPECT_EQ(positions->Get(0), 11u);
  EXPECT_EQ(positions->Get(3), 7u);
  EXPECT_EQ(positions->Get(1), 0u);

  // The first Persist writes what held before it: nothing.
  ASSERT_TRUE(positions->Persist().ok());
  EXPECT_EQ(OpenPositions(dir.path())->Get(0), 0u);
  EXPECT_EQ(OpenPositions(dir.path())->Get(3), 0u);

  positions->Set(0, 12);
  // The second writes the first's values.
  ASSERT_TRUE(positions->Persist().ok());
  {
    auto reopened = OpenPositions(dir.path());
    EXPECT_EQ(reopened->Get(0), 11u);
    EXPECT_EQ(reopened->Get(3), 7u);
  }
  // A clean stop writes the current ones.
  ASSERT_TRUE(positions->PersistCurrent().ok());
  EXPECT_EQ(OpenPositions(dir.path())->Get(0), 12u);
  // ... and they become the values the next Persist writes.
  positions->Set(0, 13);
  ASSERT_TRUE(positions->Persist().ok());
  EXPECT_EQ(OpenPositions(dir.path())->Get(0), 12u);

  // A reopened set's first Persist writes what it loaded, so a restart never moves the file
  // back.
  auto reopened = OpenPositions(dir.path());
  reopened->Set(0, 20);
  reopened->Set(5, 1);
  ASSERT_TRUE(reopened->Persist().ok());
  auto third = OpenPositions(dir.path());
  EXPECT_EQ(third->Get(0), 12u);
  EXPECT_EQ(third->Get(3), 7u);
  EXPECT_EQ(third->Get(5), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/cluster/positions.tmp"));
}

TEST(PositionsTest, LargeValuesRoundTrip) {
  testing::TempDir dir;
  auto positions = OpenPositions(dir.path());
  const LogSeq big = std::numeric_limits<LogSeq>::max();
  positions->Set(std::numeric_limits<PartitionId>::max(), big);
  for (PartitionId p = 0; p < 300; ++p) positions->Set(p, p * 1'000'003ull);
  ASSERT_TRUE(positions->PersistCurrent().ok());
  auto reopened = OpenPositions(dir.path());
  EXPECT_EQ(reopened->Get(std::numeric_limits<PartitionId>::max()), big);
  for (PartitionId p = 0; p < 300; ++p) EXPECT_EQ(reopened->Get(p), p * 1'000'003ull);
}

TEST(PositionsTest, CommentsAndBlankLinesAreSkipped) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/cluster");
  WriteFile(dir.path() + "/cluster/positions", "# written by hand\n\n2 40\n# more\n7 3\n");
  auto positions = OpenPositions(dir.path());
  ASSERT_NE(positions, nullptr);
  EXPECT_EQ(positions->Get(2), 40u);
  EXPECT_EQ(positions->Get(7), 3u);
}

TEST(PositionsTest, DamagedFileIsCorruptionNamingTheLine) {
  const std::string bad_lines[] = {"x",      "1",         "1 ",           " 1 2",
                                   "1 2 3",  "1  2",      "1\t2",         "-1 2",
                                   "1 -2",   "1 2x",      "4294967296 1", "1 18446744073709551616",
                                   "1 0x10", "\x01\x02 3"};
  for (const std::string& bad : bad_lines) {
    testing::TempDir dir;
    std::filesystem::create_directories(dir.path() + "/cluster");
    WriteFile(dir.path() + "/cluster/positions", "# header\n0 5\n" + bad + "\n1 6\n");
    std::unique_ptr<Positions> positions;
    const Status st = Positions::Open(dir.path(), &positions);
    EXPECT_TRUE(st.IsCorruption()) << "'" << bad << "': " << st.ToString();
    EXPECT_NE(st.ToString().find("line 3"), std::string::npos) << st.ToString();
    EXPECT_NE(st.ToString().find("positions"), std::string::npos) << st.ToString();
  }
}

// ------------------------------------------------------------------------------------------------
// Routing and applying.

using SeriesPoints = std::map<std::int64_t, double>;
using Expected = std::map<promql::Labels, SeriesPoints>;

promql::Labels LabelsOf(const std::string& name,
                        std::vector<std::pair<std::string, std::string>> tags) {
  tags.emplace_back(std::string(SeriesIndex::kMetricName), name);
  std::sort(tags.begin(), tags.end());
  return tags;
}

std::string Describe(const promql::Labels& labels) {
  std::string out = "{";
  for (const auto& [k, v] : labels) out += k + "=\"" + v + "\",";
  return out + "}";
}

// Every series `storage` holds with its points, through the query path; compared with
// `expected` exactly (timestamps, and values bit for bit).
::testing::AssertionResult HoldsExactly(Storage& storage, const Expected& expected) {
  Selector selector;
  if (!ParseSelector(R"({__name__=~".+"})", &selector).ok()) {
    return ::testing::AssertionFailure() << "selector";
  }
  std::vector<promql::FetchedSeries> got;
  const Status st = promql::SelectLocal(storage, selector, std::numeric_limits<std::int64_t>::min(),
                                        std::numeric_limits<std::int64_t>::max(), 1'000'000, &got);
  if (!st.ok()) return ::testing::AssertionFailure() << "select: " << st.ToString();
  std::map<promql::Labels, const promql::FetchedSeries*> by_labels;
  for (const promql::FetchedSeries& s : got) by_labels[s.labels] = &s;
  for (const auto& [labels, points] : expected) {
    const auto it = by_labels.find(labels);
    if (it == by_labels.end()) {
      return ::testing::AssertionFailure() << "series " << Describe(labels) << " is missing";
    }
    const promql::FetchedSeries& s = *it->second;
    if (s.ts.size() != points.size()) {
      return ::testing::AssertionFailure() << "series " << Describe(labels) << " holds "
                                           << s.ts.size() << " points, expected " << points.size();
    }
    std::size_t i = 0;
    for (const auto& [ts, value] : points) {
      if (s.ts[i] != ts ||
          std::bit_cast<std::uint64_t>(s.values[i]) != std::bit_cast<std::uint64_t>(value)) {
        return ::testing::AssertionFailure()
               << "series " << Describe(labels) << " point " << i << ": (" << s.ts[i] << ", "
               << s.values[i] << "), expected (" << ts << ", " << value << ")";
      }
      ++i;
    }
  }
  if (got.size() != expected.size()) {
    for (const promql::FetchedSeries& s : got) {
      if (expected.count(s.labels) == 0) {
        return ::testing::AssertionFailure() << "unexpected series " << Describe(s.labels);
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// One write as the accepting node receives it: its lines, their precision, its clock then.
struct WriteCall {
  std::string text;
  ingest::Precision precision;
  std::int64_t accept_ns;
};

struct PrecisionCase {
  ingest::Precision precision;
  const char* name;
  std::int64_t unit_ns;
};
constexpr PrecisionCase kPrecisions[] = {
    {ingest::Precision::kNanoseconds, "ns", 1},
    {ingest::Precision::kMicroseconds, "us", 1'000},
    {ingest::Precision::kMilliseconds, "ms", 1'000'000},
    {ingest::Precision::kSeconds, "s", 1'000'000'000},
    {ingest::Precision::kMinutes, "m", 60'000'000'000},
    {ingest::Precision::kHours, "h", 3'600'000'000'000},
};

// Accept times not on a whole unit of any precision, and more than an hour apart, so that every
// precision sees a different truncated time per write.
constexpr std::int64_t kAccept0 = 1'700'000'000'123'456'789;
constexpr std::int64_t kAcceptStep = 7'300'987'654'321;  // 2 h 1 min 40.98... s

// Per precision: lines with timestamps (tags in either order, escapes, a string field,
// comments, a blank line, a malformed line), then three writes of lines without timestamps at
// three accept times (trailing blanks and CRLF endings included). `*expected` gets what storage
// must hold.
std::vector<WriteCall> Workload(Expected* expected, std::uint64_t* malformed_lines) {
  std::vector<WriteCall> calls;
  *malformed_lines = 0;
  for (const PrecisionCase& c : kPrecisions) {
    const std::string m = std::string("lp_") + c.name;
    std::string text = "# a comment\n\n";
    for (int i = 0; i < 40; ++i) {
      const std::string host = "h" + std::to_string(i % 5);
      const std::string region = "r" + std::to_string(i % 2);
      const std::int64_t ts = 400'000 + i;
      text += m;
      text += i % 2 == 0 ? ",host=" + host + ",region=" + region
                         : ",region=" + region + ",host=" + host;
      text += " v=" + std::to_string(i) + ".25,n=" + std::to_string(-i) + "i";
      if (i % 7 == 0) text += ",s=\"not stored\"";
      text += " " + std::to_string(ts) + "\n";
      const std::vector<std::pair<std::string, std::string>> tags = {{"host", host},
                                                                     {"region", region}};
      (*expected)[LabelsOf(m + "_v", tags)][ts * c.unit_ns] = i + 0.25;
      (*expected)[LabelsOf(m + "_n", tags)][ts * c.unit_ns] = -i;
      if (i == 20) {
        text += m + ",host=bad\n";  // no field: malformed, skipped
        ++*malformed_lines;
      }
    }
    text += m + R"(,host\ name=a\,b,k\=x=v\=w ok=true 400100)" + "\n";
    (*expected)[LabelsOf(m + "_ok", {{"host name", "a,b"}, {"k=x", "v=w"}})][400'100 * c.unit_ns] =
        1;
    calls.push_back(WriteCall{text, c.precision, kAccept0});

    for (int k = 0; k < 3; ++k) {
      const std::int64_t accept = kAccept0 + (k + 1) * kAcceptStep;
      const std::int64_t ts = accept / c.unit_ns * c.unit_ns;
      std::string lines;
      for (int h = 0; h < 5; ++h) {
        const std::string host = "h" + std::to_string(h);
        const std::string region = "r" + std::to_string(h % 2);
        lines += m + ",region=" + region + ",host=" + host +
                 " v=" + std::to_string(1000 + 10 * k + h) + ".5";
        lines += h == 0 ? "   \r\n" : h == 1 ? "\r\n" : h == 2 ? " \n" : "\n";
        (*expected)[LabelsOf(m + "_v", {{"host", host}, {"region", region}})][ts] =
            1000 + 10 * k + h + 0.5;
      }
      // The last line without its newline, as the end of an HTTP body.
      lines += m + ",host=last v=" + std::to_string(k);
      (*expected)[LabelsOf(m + "_v", {{"host", "last"}})][ts] = k;
      calls.push_back(WriteCall{lines, c.precision, accept});
    }
  }
  return calls;
}

class RouteAndApplyTest : public ::testing::TestWithParam<bool> {
 protected:
  static constexpr std::uint32_t kPartitions = 8;

  void SetUp() override {
    Logger("ingest")->set_level(spdlog::level::off);
    Logger("cluster")->set_level(spdlog::level::off);
    data_dir_ = dir_.path() + "/data";
    ASSERT_TRUE(Storage::Open(testing::TestStorageOptions(data_dir_), 2, clock_, &storage_).ok());
    shards_ = std::make_unique<ingest::ShardSet>(*storage_, 16);
    shards_->Start();
    ASSERT_TRUE(Positions::Open(data_dir_, &positions_).ok());
    apply_remote_write_ =
        std::make_unique<ingest::RemoteWriteHandler>(*shards_, storage_->index(), ingest_options_);
    routing_ = std::make_unique<LineRouting>(log_, Options(), clock_);
  }

  void TearDown() override {
    routing_.reset();
    apply_remote_write_.reset();
    shards_->Stop();
    shards_.reset();
    if (storage_) {
      EXPECT_TRUE(storage_->Close().ok());
    }
    Logger("ingest")->set_level(spdlog::level::info);
    Logger("cluster")->set_level(spdlog::level::info);
  }

  // Small messages, so that a write spreads over several per partition.
  ClusterOptions Options() const {
    ClusterOptions o;
    o.name = "unit";
    o.node_id = "n1";
    o.partitions = kPartitions;
    o.replication = 1;
    o.batch_max_bytes = 300;
    o.compress_log = GetParam();
    return o;
  }

  // `text` as a TCP connection of `precision` delivers it to a cluster node (node/main.cc's
  // RoutedIngester): parsed here, published to the log, answered once the log stored it.
  ingest::IngestStats Write(std::string_view text, ingest::Precision precision) {
    std::unique_ptr<ingest::LineRouter> router = routing_->NewRouter(precision);
    ingest::LineIngester ingester(*shards_, storage_->index(), clock_, precision,
                                  ingest_options_.max_line_bytes, ingest::WriteProtocol::kTcp,
                                  "test");
    ingester.set_router(router.get());
    ingester.Consume(text);
    ingester.Finish();
    EXPECT_TRUE(ingester.storage_status().ok()) << ingester.storage_status().ToString();
    return ingester.stats();
  }

  // Runs an Applier owning every partition until each partition's position reaches the log's
  // last message, then stops it.
  void ApplyAll() {
    Applier applier(log_, *positions_, *shards_, storage_->index(), clock_, ingest_options_,
                    *apply_remote_write_);
    std::vector<PartitionId> all(kPartitions);
    std::iota(all.begin(), all.end(), 0);
    applier.SetOwned(all);
    // The applier stores a partition's position, then its progress: both must have caught up
    // before the progress is compared with the position.
    const bool caught_up = Eventually(
        [&] {
          for (const PartitionProgress& progress : applier.Progress()) {
            if (!progress.consuming || progress.applied != positions_->Get(progress.partition)) {
              return false;
            }
          }
          for (PartitionId p : all) {
            LogSeq first = 0, last = 0;
            if (!log_.Bounds(p, &first, &last).ok() || positions_->Get(p) < last) return false;
          }
          return true;
        },
        milliseconds(20'000));
    EXPECT_TRUE(caught_up) << "the applier did not reach the end of every partition";
    for (const PartitionProgress& progress : applier.Progress()) {
      EXPECT_TRUE(progress.consuming) << progress.partition;
      EXPECT_EQ(progress.applied, positions_->Get(progress.partition));
      EXPECT_EQ(progress.pending, 0u);
    }
    applier.Stop();
  }

  // The workload through the router; the clock then moves on, so that only times fixed at
  // accepting can be right.
  Expected WriteWorkload() {
    Expected expected;
    std::uint64_t malformed = 0;
    std::uint64_t seen_malformed = 0;
    for (const WriteCall& call : Workload(&expected, &malformed)) {
      clock_.Set(call.accept_ns);
      seen_malformed += Write(call.text, call.precision).lines_malformed;
    }
    EXPECT_EQ(seen_malformed, malformed);
    clock_.Set(kAccept0 + 1000 * kAcceptStep);
    return expected;
  }

  testing::TempDir dir_;
  std::string data_dir_;
  ManualClock clock_{kAccept0};
  IngestOptions ingest_options_;
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<ingest::ShardSet> shards_;
  std::unique_ptr<Positions> positions_;
  std::unique_ptr<ingest::RemoteWriteHandler> apply_remote_write_;
  MemoryLog log_{kPartitions};
  std::unique_ptr<LineRouting> routing_;
};

TEST_P(RouteAndApplyTest, EveryPointOnceWithTheAcceptTime) {
  const Expected expected = WriteWorkload();
  // Nothing reached storage on the accepting side: the lines went to the log.
  EXPECT_EQ(storage_->index().size(), 0u);
  ASSERT_GT(log_.TotalMessages(), kPartitions);
  ApplyAll();
  EXPECT_TRUE(HoldsExactly(*storage_, expected));
}

TEST_P(RouteAndApplyTest, RetriedPublishesAreStoredOnce) {
  log_.set_publish_twice(true);
  const Expected expected = WriteWorkload();
  // Each message was offered twice and stored once: the ids are unique per message, or the
  // log would have dropped messages as duplicates of others.
  const std::vector<std::string> ids = log_.IdsInOrder();
  EXPECT_EQ(log_.duplicates(), ids.size());
  EXPECT_EQ(log_.TotalMessages(), ids.size());
  ApplyAll();
  EXPECT_TRUE(HoldsExactly(*storage_, expected));
}

TEST_P(RouteAndApplyTest, ApplyingTheSameMessagesAgainStoresEveryPointOnce) {
  const Expected expected = WriteWorkload();
  ApplyAll();
  ASSERT_TRUE(HoldsExactly(*storage_, expected));
  const std::size_t series = storage_->index().size();
  // As after a crash with positions behind the data.
  const double applied_before = CounterValue("ingot_cluster_applied_messages_total");
  for (PartitionId p = 0; p < kPartitions; ++p) positions_->Set(p, 0);
  ApplyAll();
  EXPECT_EQ(CounterValue("ingot_cluster_applied_messages_total") - applied_before,
            static_cast<double>(log_.TotalMessages()));
  EXPECT_TRUE(HoldsExactly(*storage_, expected));
  EXPECT_EQ(storage_->index().size(), series);
}

TEST_P(RouteAndApplyTest, MessagesCarryTheHeaderAndUniqueDedupIds) {
  constexpr std::int64_t kAccept = 1'650'000'000'987'654'321;
  clock_.Set(kAccept);
  std::string text;
  for (int i = 0; i < 200; ++i) {
    text += "hdr,host=h" + std::to_string(i % 13) + " v=" + std::to_string(i);
    if (i % 3 != 0) text += " " + std::to_string(1'000'000 + i);
    text += "\n";
  }
  Write(text, ingest::Precision::kMilliseconds);
  Write("hdr v=1\n", ingest::Precision::kMilliseconds);

  std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> zstd(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::size_t lines = 0;
  for (PartitionId p = 0; p < kPartitions; ++p) {
    for (const std::string& message : log_.Messages(p)) {
      BatchHeader header;
      std::string_view body;
      ASSERT_TRUE(ReadBatch(message, &header, &body).ok());
      EXPECT_EQ(header.kind, kBatchKindLineProtocol);
      EXPECT_EQ(header.precision, static_cast<std::uint8_t>(ingest::Precision::kMilliseconds));
      EXPECT_EQ(header.accept_ts_ns, kAccept);
      EXPECT_EQ(header.flags, GetParam() ? kBatchFlagZstd : 0);
      std::string decompressed;
      if (header.flags & kBatchFlagZstd) {
        const unsigned long long size = ZSTD_getFrameContentSize(body.data(), body.size());
        ASSERT_LE(size, kMaxBatchBodyBytes);
        decompressed.resize(size);
        ASSERT_EQ(ZSTD_decompressDCtx(zstd.get(), decompressed.data(), decompressed.size(),
                                      body.data(), body.size()),
                  size);
        body = decompressed;
      }
      // A message is cut once it reaches batch_max_bytes: never more than one line past it.
      EXPECT_LT(body.size(), Options().batch_max_bytes + 64);
      ASSERT_FALSE(body.empty());
      EXPECT_EQ(body.back(), '\n');
      // Every line carries a timestamp, in the message's precision, and belongs here.
      ingest::LineParser parser(ingest::Precision::kMilliseconds);
      std::size_t pos = 0;
      std::string_view line;
      std::vector<std::pair<std::string, std::string>> scratch;
      std::string identity;
      while (ingest::NextLine(body, &pos, &line, true)) {
        ingest::ParsedLine parsed;
        ingest::ParseError error;
        ASSERT_EQ(parser.Parse(line, 0, &parsed, &error), ingest::ParseResult::kPoint) << line;
        EXPECT_TRUE(parsed.has_timestamp) << line;
        if (line.find(" 1000") == std::string_view::npos) {
          EXPECT_EQ(parsed.ts_ns, kAccept / 1'000'000 * 1'000'000) << line;
        }
        LineIdentity(parsed, &scratch, &identity);
        EXPECT_EQ(PartitionOfIdentity(identity, kPartitions), p) << line;
        ++lines;
      }
    }
  }
  EXPECT_EQ(lines, 201u);

  // `<node>.<incarnation>.<n>`, n counting from 1.
  const std::vector<std::string> ids = log_.IdsInOrder();
  ASSERT_FALSE(ids.empty());
  const std::string prefix = ids[0].substr(0, ids[0].rfind('.') + 1);
  EXPECT_EQ(prefix.rfind("n1.", 0), 0u) << prefix;
  EXPECT_GT(prefix.size(), 4u) << prefix;
  std::set<std::uint64_t> numbers;
  for (const std::string& id : ids) {
    ASSERT_EQ(id.rfind(prefix, 0), 0u) << id;
    numbers.insert(std::stoull(id.substr(prefix.size())));
  }
  EXPECT_EQ(numbers.size(), ids.size());
  EXPECT_EQ(*numbers.begin(), 1u);
  EXPECT_EQ(*numbers.rbegin(), ids.size());

  // A restarted process (another LineRouting of the same node) numbers its messages from 1
  // again: its incarnation keeps its ids apart.
  routing_ = std::make_unique<LineRouting>(log_, Options(), clock_);
  Write("hdr,host=again v=1 5\n", ingest::Precision::kMilliseconds);
  const std::vector<std::string> after = log_.IdsInOrder();
  ASSERT_EQ(after.size(), ids.size() + 1);
  EXPECT_EQ(after.back().rfind("n1.", 0), 0u);
  EXPECT_NE(after.back().rfind(prefix, 0), 0u) << after.back();
  EXPECT_EQ(log_.duplicates(), 0u);
}

// Builds a message by hand, as another node would have published it.
std::string LineMessage(std::string_view lines, ingest::Precision precision,
                        std::uint8_t kind = kBatchKindLineProtocol) {
  return MessageOf(BatchHeader{kind, static_cast<std::uint8_t>(precision), 0, 0}, lines);
}

std::string ZstdLineMessage(std::string_view lines, ingest::Precision precision) {
  std::string frame(ZSTD_compressBound(lines.size()), '\0');
  const std::size_t n = ZSTD_compress(frame.data(), frame.size(), lines.data(), lines.size(), 1);
  EXPECT_FALSE(ZSTD_isError(n));
  frame.resize(n);
  return MessageOf(
      BatchHeader{kBatchKindLineProtocol, static_cast<std::uint8_t>(precision), kBatchFlagZstd, 0},
      frame);
}

TEST_P(RouteAndApplyTest, CorruptMessagesAreSkippedAndCountedAndTheNextOnesApply) {
  using ingest::Precision;
  const std::string good_zstd = ZstdLineMessage("c,host=a v=2 2000\n", Precision::kNanoseconds);
  std::string truncated_frame = good_zstd.substr(0, good_zstd.size() - 3);
  // A frame that declares more than a message may hold.
  std::string oversized =
      ZstdLineMessage(std::string(kMaxBatchBodyBytes + 1, '#'), Precision::kNanoseconds);
  std::string bad_magic = LineMessage("c,host=a v=9 9000\n", Precision::kNanoseconds);
  bad_magic[0] = 'X';
  // Bad magic, shorter than a header, unknown kind, unknown precision, a zstd flag over plain
  // lines, a truncated frame, an oversized frame.
  const std::string corrupt[] = {
      bad_magic,
      "IGB1",
      LineMessage("c,host=a v=9 9000\n", Precision::kNanoseconds, 7),
      MessageOf(BatchHeader{kBatchKindLineProtocol, 6, 0, 0}, "c,host=a v=9 9000\n"),
      MessageOf(BatchHeader{kBatchKindLineProtocol, 0, kBatchFlagZstd, 0}, "c,host=a v=9 9\n"),
      truncated_frame,
      oversized,
  };
  const PartitionId p = 3;
  const double corrupt_before = CounterValue("ingot_cluster_corrupt_messages_total");
  log_.Append(p, "m1", LineMessage("c,host=a v=1 1000\n", Precision::kNanoseconds));
  int id = 0;
  for (const std::string& message : corrupt) log_.Append(p, "bad" + std::to_string(id++), message);
  log_.Append(p, "m2", good_zstd);
  // A remote-write body that does not decode is refused by the handler (400), not retried.
  log_.Append(p, "m3", LineMessage("\xff\xff\xff", Precision::kNanoseconds, kBatchKindRemoteWrite));
  log_.Append(p, "m4", LineMessage("c,host=a v=3 3\nc,host=a v=4 4\n", Precision::kSeconds));
  ApplyAll();
  EXPECT_EQ(CounterValue("ingot_cluster_corrupt_messages_total") - corrupt_before,
            static_cast<double>(std::size(corrupt)));
  EXPECT_EQ(positions_->Get(p), 4 + std::size(corrupt));
  Expected expected;
  expected[LabelsOf("c_v", {{"host", "a"}})] = {
      {1000, 1}, {2000, 2}, {3'000'000'000, 3}, {4'000'000'000, 4}};
  EXPECT_TRUE(HoldsExactly(*storage_, expected));
}

TEST_P(RouteAndApplyTest, MessagesPastTheLogsRetentionAreCountedAsAGap) {
  const PartitionId p = 5;
  for (int i = 1; i <= 4; ++i) {
    log_.Append(p, "g" + std::to_string(i),
                LineMessage("gap v=" + std::to_string(i) + " " + std::to_string(i) + "\n",
                            ingest::Precision::kNanoseconds));
  }
  log_.DropBefore(p, 3);
  const double gaps_before = CounterValue("ingot_cluster_log_gaps_total");
  ApplyAll();
  EXPECT_EQ(CounterValue("ingot_cluster_log_gaps_total") - gaps_before, 1.0);
  EXPECT_EQ(positions_->Get(p), 4u);
  Expected expected;
  expected[LabelsOf("gap_v", {})] = {{3, 3}, {4, 4}};
  EXPECT_TRUE(HoldsExactly(*storage_, expected));
}

TEST_P(RouteAndApplyTest, RemoteWriteSeriesAreRoutedAndApplied) {
  ingest::RemoteWriteHandler accepting(*shards_, storage_->index(), ingest_options_);
  accepting.set_router_factory([this] { return routing_->NewSeriesRouter(); });
  const double stale = std::bit_cast<double>(0x7ff0000000000002ull);
  prometheus::WriteRequest request;
  Expected expected;
  for (int s = 0; s < 20; ++s) {
    // Sorted by name, as remote write requires.
    const ingest::testutil::LabelList labels = {
        {"__name__", "http_requests_total"}, {"instance", "i" + std::to_string(s)}, {"job", "api"}};
    std::vector<std::pair<std::int64_t, double>> samples;
    SeriesPoints& points = expected[LabelsOf(
        "http_requests_total", {{"job", "api"}, {"instance", "i" + std::to_string(s)}})];
    for (int i = 0; i < 5; ++i) {
      const std::int64_t ms = 1'700'000'000'000 + i * 15'000;
      const double value = i == 4 ? stale : s * 100 + i + 0.125;
      samples.emplace_back(ms, value);
      points[ms * 1'000'000] = value;
    }
    ingest::testutil::AddSeries(&request, labels, samples);
  }
  const std::string body = ingest::testutil::Encode(request);
  ingest::RemoteWriteRequest http;
  http.body = body;
  http.content_encoding = "snappy";
  const ingest::RemoteWriteResponse response = accepting.Handle(http, /*may_block=*/true);
  ASSERT_EQ(response.status, 204) << response.body;
  EXPECT_EQ(storage_->index().size(), 0u);
  // Series spread over the partitions, each message a remote-write one.
  std::size_t messages = 0;
  for (PartitionId p = 0; p < kPartitions; ++p) {
    for (const std::string& message : log_.Messages(p)) {
      BatchHeader header;
      std::string_view rest;
      ASSERT_TRUE(ReadBatch(message, &header, &rest).ok());
      EXPECT_EQ(header.kind, kBatchKindRemoteWrite);
      EXPECT_EQ(header.precision, 0);
      ++messages;
    }
  }
  EXPECT_GT(messages, 1u);
  ApplyAll();
  EXPECT_TRUE(HoldsExactly(*storage_, expected));
}

TEST_P(RouteAndApplyTest, AWriteFailsWhenTheLogDoesNotStoreIt) {
  log_.set_unavailable(true);
  {
    std::unique_ptr<ingest::LineRouter> router = routing_->NewRouter(ingest::Precision::kSeconds);
    ingest::LineIngester ingester(*shards_, storage_->index(), clock_, ingest::Precision::kSeconds,
                                  ingest_options_.max_line_bytes, ingest::WriteProtocol::kTcp,
                                  "test");
    ingester.set_router(router.get());
    ingester.Consume("down v=1 1\n");
    ingester.Finish();
    EXPECT_TRUE(ingester.storage_status().IsIOError()) << ingester.storage_status().ToString();
  }
  log_.set_unavailable(false);
  // The next write, through the pooled writer, succeeds.
  Write("up v=1 1\n", ingest::Precision::kSeconds);
  ApplyAll();
  Expected expected;
  expected[LabelsOf("up_v", {})] = {{1'000'000'000, 1}};
  EXPECT_TRUE(HoldsExactly(*storage_, expected));
}

// A line the accepting node takes must be stored by the owners: the accepting node checks
// ingest.max_line_bytes before it appends " <accept time>" to a line without a timestamp (20
// bytes at ns precision), so owners must allow for those bytes.
TEST_P(RouteAndApplyTest, LineWithoutTimestampAtTheLengthLimitIsStored) {
  ingest_options_.max_line_bytes = 64;
  const std::string head = "limit,pad=";
  const std::string pad(64 - head.size() - std::string(" v=1.5").size(), 'x');
  const std::string line = head + pad + " v=1.5";
  ASSERT_EQ(line.size(), 64u);
  const ingest::IngestStats stats = Write(line + "\n", ingest::Precision::kNanoseconds);
  EXPECT_EQ(stats.points, 1u);
  EXPECT_EQ(stats.lines_too_long, 0u);
  ApplyAll();
  Expected expected;
  expected[LabelsOf("limit_v", {{"pad", pad}})] = {{kAccept0, 1.5}};
  EXPECT_TRUE(HoldsExactly(*storage_, expected));
}

TEST_P(RouteAndApplyTest, APartitionGivenUpStopsAndResumesFromItsPositionWhenTakenBack) {
  Write("own,host=a v=1 1\n", ingest::Precision::kSeconds);
  Applier applier(log_, *positions_, *shards_, storage_->index(), clock_, ingest_options_,
                  *apply_remote_write_);
  std::vector<PartitionId> all(kPartitions);
  std::iota(all.begin(), all.end(), 0);
  const auto caught_up = [&] {
    for (PartitionId p : all) {
      LogSeq first = 0, last = 0;
      if (!log_.Bounds(p, &first, &last).ok() || positions_->Get(p) < last) return false;
    }
    return true;
  };
  applier.SetOwned(all);
  ASSERT_TRUE(Eventually(caught_up));

  // Given up: its thread ends (SetOwned joins it), and what is written meanwhile waits in the log.
  applier.SetOwned({});
  for (const PartitionProgress& progress : applier.Progress()) {
    EXPECT_FALSE(progress.consuming) << progress.partition;
  }
  Write("own,host=a v=2 2\n", ingest::Precision::kSeconds);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(caught_up());
  Expected expected;
  expected[LabelsOf("own_v", {{"host", "a"}})] = {{1'000'000'000, 1}};
  EXPECT_TRUE(HoldsExactly(*storage_, expected));

  // Taken back: from its position on, without applying the first message again.
  const double applied_before = CounterValue("ingot_cluster_applied_messages_total");
  applier.SetOwned(all);
  ASSERT_TRUE(Eventually(caught_up));
  applier.Stop();
  EXPECT_EQ(CounterValue("ingot_cluster_applied_messages_total") - applied_before, 1.0);
  expected[LabelsOf("own_v", {{"host", "a"}})][2'000'000'000] = 2;
  EXPECT_TRUE(HoldsExactly(*storage_, expected));
}

INSTANTIATE_TEST_SUITE_P(Compression, RouteAndApplyTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Zstd" : "Plain";
                         });

// ------------------------------------------------------------------------------------------------
// Membership. It measures leases with steady_clock, so these tests run on short leases and wait
// for what they expect with deadlines.

constexpr std::uint32_t kRenewMs = 50;
constexpr std::uint32_t kTtlMs = 200;
constexpr std::uint32_t kGraceMs = 300;
constexpr std::uint32_t kMemberPartitions = 16;

ClusterOptions LeaseOptions(const std::string& id, std::uint32_t replication) {
  ClusterOptions o;
  o.name = "unit";
  o.node_id = id;
  o.partitions = kMemberPartitions;
  o.replication = replication;
  o.lease_renew_ms = kRenewMs;
  o.lease_ttl_ms = kTtlMs;
  o.dead_node_grace_ms = kGraceMs;
  return o;
}

std::string HttpOf(const std::string& id) { return id + ".example:8086"; }

const MemberView* Find(const std::vector<MemberView>& members, const std::string& id) {
  for (const MemberView& m : members) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

class MembershipTest : public ::testing::Test {
 protected:
  void SetUp() override { Logger("cluster")->set_level(spdlog::level::off); }
  void TearDown() override {
    // Before the bucket: a membership's watch must not outlive it.
    nodes_.clear();
    Logger("cluster")->set_level(spdlog::level::info);
  }

  Membership& Start(const std::string& id, std::uint32_t replication) {
    nodes_[id] = std::make_unique<Membership>(kv_, LeaseOptions(id, replication), HttpOf(id));
    EXPECT_TRUE(nodes_[id]->Start().ok());
    return *nodes_[id];
  }

  // Whether `viewer` sees exactly `ids`, all live and candidates.
  bool SeesLive(const std::string& viewer, const std::set<std::string>& ids) {
    const std::vector<MemberView> members = nodes_.at(viewer)->Members();
    if (members.size() != ids.size()) return false;
    for (const MemberView& m : members) {
      if (ids.count(m.id) == 0 || !m.live || !m.candidate || m.http != HttpOf(m.id)) return false;
    }
    return true;
  }

  // How many of `ids` own each partition by their own views.
  std::vector<int> Coverage(const std::set<std::string>& ids) {
    std::vector<int> owners(kMemberPartitions, 0);
    for (const std::string& id : ids) {
      for (PartitionId p : nodes_.at(id)->Owned()) ++owners.at(p);
    }
    return owners;
  }

  MemoryKv kv_;
  std::map<std::string, std::unique_ptr<Membership>> nodes_;
};

TEST_F(MembershipTest, TwoNodesSeeEachOtherLive) {
  Start("a", 1);
  Start("b", 1);
  ASSERT_TRUE(Eventually([&] { return SeesLive("a", {"a", "b"}) && SeesLive("b", {"a", "b"}); }));
  EXPECT_TRUE(nodes_["a"]->settled());
  EXPECT_TRUE(nodes_["b"]->settled());
  EXPECT_EQ(nodes_["a"]->LivePeers(), std::vector<std::string>{HttpOf("b")});
  EXPECT_EQ(nodes_["b"]->LivePeers(), std::vector<std::string>{HttpOf("a")});
  // Renewals keep them live well past the ttl.
  std::this_thread::sleep_for(milliseconds(3 * kTtlMs));
  EXPECT_TRUE(SeesLive("a", {"a", "b"}));
  EXPECT_TRUE(SeesLive("b", {"a", "b"}));
  // One owner per partition, and the two views agree.
  EXPECT_EQ(Coverage({"a", "b"}), std::vector<int>(kMemberPartitions, 1));
  for (PartitionId p = 0; p < kMemberPartitions; ++p) {
    EXPECT_EQ(nodes_["a"]->OwnersOfPartition(p), nodes_["b"]->OwnersOfPartition(p));
    EXPECT_EQ(nodes_["a"]->OwnersOfPartition(p), OwnersOf(p, {"a", "b"}, 1));
  }
}

TEST_F(MembershipTest, StoppedNodeIsDownThenDroppedThenForgotten) {
  constexpr std::uint32_t kR = 2;
  const std::set<std::string> all = {"a", "b", "c", "d"};
  const std::set<std::string> survivors = {"a", "b", "c"};
  for (const std::string& id : all) Start(id, kR);
  ASSERT_TRUE(Eventually([&] {
    for (const std::string& id : all) {
      if (!SeesLive(id, all)) return false;
    }
    return Coverage(all) == std::vector<int>(kMemberPartitions, kR);
  }));
  std::vector<std::vector<std::string>> owners_before;
  for (PartitionId p = 0; p < kMemberPartitions; ++p) {
    owners_before.push_back(nodes_["a"]->OwnersOfPartition(p));
  }

  const auto stopped = steady_clock::now();
  nodes_["d"]->Stop();
  // Down once its lease is older than the ttl, yet still a candidate during the grace: a node
  // restarting within it keeps its partitions.
  bool seen_down_candidate = false;
  steady_clock::time_point down_at, dropped_at;
  ASSERT_TRUE(Eventually([&] {
    const std::vector<MemberView> members = nodes_["a"]->Members();
    const MemberView* d = Find(members, "d");
    if (d == nullptr) {
      // Dropped and deleted between two polls.
      dropped_at = steady_clock::now();
      return down_at != steady_clock::time_point();
    }
    if (!d->live && down_at == steady_clock::time_point()) down_at = steady_clock::now();
    if (!d->live && d->candidate) {
      seen_down_candidate = true;
      EXPECT_GT(d->unchanged_ms, kTtlMs);
      EXPECT_EQ(nodes_["a"]->OwnersOfPartition(0), owners_before[0]);
    }
    if (!d->candidate) {
      dropped_at = steady_clock::now();
      return true;
    }
    return false;
  }));
  EXPECT_TRUE(seen_down_candidate);
  // Its last renewal was at most a renew period before the stop.
  EXPECT_GE(down_at - stopped, milliseconds(kTtlMs - kRenewMs));
  EXPECT_GE(dropped_at - stopped, milliseconds(kTtlMs + kGraceMs - kRenewMs));

  // The survivors delete its key, and forget it.
  ASSERT_TRUE(Eventually([&] {
    if (kv_.Has("node.d")) return false;
    for (const std::string& id : survivors) {
      if (!SeesLive(id, survivors)) return false;
    }
    return true;
  }));
  ASSERT_TRUE(
      Eventually([&] { return Coverage(survivors) == std::vector<int>(kMemberPartitions, kR); }));
  // Only the partitions it held moved.
  for (PartitionId p = 0; p < kMemberPartitions; ++p) {
    const std::vector<std::string> now = nodes_["a"]->OwnersOfPartition(p);
    EXPECT_FALSE(Contains(now, "d"));
    if (!Contains(owners_before[p], "d")) {
      EXPECT_EQ(now, owners_before[p]) << p;
    }
    EXPECT_EQ(now, nodes_["b"]->OwnersOfPartition(p)) << p;
    EXPECT_EQ(now, nodes_["c"]->OwnersOfPartition(p)) << p;
  }
}

TEST_F(MembershipTest, ViewCutOffFromTheBucketJudgesNoOne) {
  Membership& a = Start("a", 1);  // the bucket's watch 0
  Start("b", 1);
  ASSERT_TRUE(Eventually([&] { return SeesLive("a", {"a", "b"}) && SeesLive("b", {"a", "b"}); }));
  const std::vector<PartitionId> owned_before = a.Owned();
  ASSERT_LT(owned_before.size(), kMemberPartitions);

  kv_.CutWatch(0, true);
  nodes_["b"]->Stop();
  // Past the ttl and the grace: a's own renewals stopped coming back too, so b's silence may be
  // a's own. It keeps b live, takes none of its partitions, and leaves its key.
  std::this_thread::sleep_for(milliseconds(kTtlMs + kGraceMs + 4 * kRenewMs));
  const std::vector<MemberView> members = a.Members();
  const MemberView* b = Find(members, "b");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->live);
  EXPECT_TRUE(b->candidate);
  EXPECT_EQ(b->unchanged_ms, 0);
  EXPECT_EQ(a.Owned(), owned_before);
  EXPECT_TRUE(kv_.Has("node.b"));

  // Back in touch, a judges again: b is long gone.
  kv_.CutWatch(0, false);
  ASSERT_TRUE(Eventually([&] { return !kv_.Has("node.b") && SeesLive("a", {"a"}); }));
  EXPECT_EQ(a.Owned().size(), kMemberPartitions);
}

}  // namespace
}  // namespace ingot::cluster
