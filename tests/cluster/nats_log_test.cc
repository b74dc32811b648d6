// The NATS JetStream log and coordination bucket against real nats-server processes: one server
// for the contract (order, sequences, pending, dedup, layout checks, retention, key-value
// watches, reconnection), and a 3-server cluster with R3 streams whose stream leader is killed
// while a writer publishes and readers read.
#include "cluster/nats/nats_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/cluster/nats_process.h"

namespace ingot::cluster {
namespace {

using ingot::testing::NatsServerInstalled;
using ingot::testing::NatsTestCluster;
using std::chrono::milliseconds;

#define SKIP_WITHOUT_NATS()                                                     \
  do {                                                                          \
    if (!NatsServerInstalled()) GTEST_SKIP() << "nats-server is not installed"; \
  } while (0)

std::unique_ptr<NatsClient> ConnectTo(const NatsTestCluster& cluster, int attempt_ms = 2000) {
  NatsOptions options;
  options.urls = cluster.urls();
  options.name = "nats-log-test";
  options.connect_timeout_ms = 5000;
  options.publish_attempt_ms = attempt_ms;
  std::unique_ptr<NatsClient> client;
  const Status st = NatsClient::Connect(options, &client);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return client;
}

LogLayout Layout(const std::string& cluster, std::uint32_t partitions, int replicas = 1) {
  LogLayout layout;
  layout.cluster = cluster;
  layout.partitions = partitions;
  layout.replicas = replicas;
  return layout;
}

std::string Payload(PartitionId p, int i, std::size_t size = 64) {
  std::string s = fmt::format("p{}-m{}:", p, i);
  s.resize(std::max(size, s.size()), static_cast<char>('a' + (i % 26)));
  return s;
}

// One nats-server and a client connected to it, for the tests that need no more.
class OneNatsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_NATS();
    nats_ = std::make_unique<NatsTestCluster>(1);
    ASSERT_TRUE(nats_->ok());
    client_ = ConnectTo(*nats_);
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<NatsTestCluster> nats_;
  std::unique_ptr<NatsClient> client_;
};

struct Read {
  LogSeq seq;
  std::uint64_t pending;
  std::string payload;
};

// Reads until `count` messages came or `timeout_ms` passed.
std::vector<Read> ReadN(LogReader& reader, std::size_t count, int timeout_ms = 10000,
                        std::size_t batch = 100) {
  std::vector<Read> got;
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(timeout_ms);
  std::vector<LogMessage> out;
  while (got.size() < count && std::chrono::steady_clock::now() < deadline) {
    const Status st = reader.Next(batch, 500, &out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) break;
    EXPECT_LE(out.size(), batch);
    for (const LogMessage& m : out) got.push_back({m.seq, m.pending, std::string(m.payload)});
  }
  return got;
}

TEST_F(OneNatsServerTest, RoundTripOverSeveralPartitions) {
  NatsClient* client = client_.get();
  EXPECT_TRUE(client->connected());
  Log& log = client->log();
  ASSERT_TRUE(log.EnsureLayout(Layout("rt", 3)).ok());

  constexpr int kPerPartition = 5;
  auto writer = log.NewWriter();
  for (int i = 0; i < kPerPartition; ++i) {
    for (PartitionId p = 0; p < 3; ++p) {
      // One message near the 1 MiB limit per partition: messages carry whole write batches.
      const std::size_t size = i == 2 ? 900 * 1024 : 64;
      writer->Publish(p, fmt::format("rt-{}-{}", p, i), Payload(p, i, size));
    }
  }
  const Status flushed = writer->Flush(10000);
  ASSERT_TRUE(flushed.ok()) << flushed.ToString();

  for (PartitionId p = 0; p < 3; ++p) {
    LogSeq first = 99;
    LogSeq last = 99;
    ASSERT_TRUE(log.Bounds(p, &first, &last).ok());
    EXPECT_EQ(first, 1u);
    EXPECT_EQ(last, static_cast<LogSeq>(kPerPartition));

    std::unique_ptr<LogReader> reader;
    ASSERT_TRUE(log.OpenReader(p, 1, &reader).ok());
    const std::vector<Read> got = ReadN(*reader, kPerPartition, 10000, 2);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kPerPartition)) << "partition " << p;
    for (int i = 0; i < kPerPartition; ++i) {
      EXPECT_EQ(got[i].seq, static_cast<LogSeq>(i + 1));
      EXPECT_EQ(got[i].pending, static_cast<std::uint64_t>(kPerPartition - 1 - i));
      EXPECT_EQ(got[i].payload, Payload(p, i, i == 2 ? 900 * 1024 : 64));
    }
    // Caught up: nothing more, without an error.
    std::vector<LogMessage> out;
    ASSERT_TRUE(reader->Next(10, 200, &out).ok());
    EXPECT_TRUE(out.empty());
  }

  // An empty partition's bounds.
  ASSERT_TRUE(log.EnsureLayout(Layout("rt-empty", 1)).ok());
  LogSeq first = 7;
  LogSeq last = 7;
  ASSERT_TRUE(log.Bounds(0, &first, &last).ok());
  EXPECT_EQ(first, 0u);
  EXPECT_EQ(last, 0u);
}

TEST_F(OneNatsServerTest, ReaderStartsInTheMiddleAndFollowsNewMessages) {
  NatsClient* client = client_.get();
  Log& log = client->log();
  ASSERT_TRUE(log.EnsureLayout(Layout("mid", 1)).ok());
  auto writer = log.NewWriter();
  for (int i = 0; i < 10; ++i) writer->Publish(0, fmt::format("mid-{}", i), Payload(0, i));
  ASSERT_TRUE(writer->Flush(5000).ok());

  std::unique_ptr<LogReader> reader;
  ASSERT_TRUE(log.OpenReader(0, 7, &reader).ok());
  std::vector<Read> got = ReadN(*reader, 4);
  ASSERT_EQ(got.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i].seq, static_cast<LogSeq>(7 + i));
    EXPECT_EQ(got[i].payload, Payload(0, 6 + i));
    EXPECT_EQ(got[i].pending, static_cast<std::uint64_t>(3 - i));
  }

  // A reader ahead of the log waits for the next message.
  std::unique_ptr<LogReader> ahead;
  ASSERT_TRUE(log.OpenReader(0, 11, &ahead).ok());
  std::vector<LogMessage> out;
  ASSERT_TRUE(ahead->Next(10, 100, &out).ok());
  EXPECT_TRUE(out.empty());
  writer->Publish(0, "mid-10", Payload(0, 10));
  ASSERT_TRUE(writer->Flush(5000).ok());
  got = ReadN(*ahead, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].seq, 11u);
  EXPECT_EQ(got[0].payload, Payload(0, 10));
  got = ReadN(*reader, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].seq, 11u);
}

TEST_F(OneNatsServerTest, SameDedupIdIsStoredOnce) {
  NatsClient* client = client_.get();
  Log& log = client->log();
  ASSERT_TRUE(log.EnsureLayout(Layout("dedup", 1)).ok());
  auto writer = log.NewWriter();
  writer->Publish(0, "batch-1", "one");
  ASSERT_TRUE(writer->Flush(5000).ok());
  LogSeq first = 0;
  LogSeq last = 0;
  ASSERT_TRUE(log.Bounds(0, &first, &last).ok());
  ASSERT_EQ(last, 1u);

  // A retry of the same message, in the same flush and in a later one, from another writer.
  writer->Publish(0, "batch-2", "two");
  writer->Publish(0, "batch-2", "two");
  ASSERT_TRUE(writer->Flush(5000).ok());
  auto other = log.NewWriter();
  other->Publish(0, "batch-2", "two");
  other->Publish(0, "batch-1", "one");
  ASSERT_TRUE(other->Flush(5000).ok());
  ASSERT_TRUE(log.Bounds(0, &first, &last).ok());
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(last, 2u);

  std::unique_ptr<LogReader> reader;
  ASSERT_TRUE(log.OpenReader(0, 1, &reader).ok());
  const std::vector<Read> got = ReadN(*reader, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].payload, "one");
  EXPECT_EQ(got[1].payload, "two");
}

TEST_F(OneNatsServerTest, FlushRefusesMessagesTheLogCannotHold) {
  NatsClient* client = client_.get();
  Log& log = client->log();
  ASSERT_TRUE(log.EnsureLayout(Layout("big", 2)).ok());
  auto writer = log.NewWriter();
  writer->Publish(1, "big-0", "small");
  writer->Publish(1, "big-1", std::string(2 << 20, 'x'));
  writer->Publish(1, "big-2", "small too");
  Status st = writer->Flush(5000);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("partition 1"), std::string_view::npos) << st.ToString();
  LogSeq first = 0;
  LogSeq last = 0;
  ASSERT_TRUE(log.Bounds(1, &first, &last).ok());
  EXPECT_EQ(last, 2u);

  writer->Publish(2, "big-3", "no such partition");
  st = writer->Flush(5000);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  // The writer goes on.
  writer->Publish(0, "big-4", "fine");
  EXPECT_TRUE(writer->Flush(5000).ok());
}

TEST_F(OneNatsServerTest, EnsureLayoutIsIdempotentAndRefusesADifferentLayout) {
  NatsClient* client = client_.get();
  Log& log = client->log();
  LogLayout layout = Layout("lay", 2);
  layout.max_age_ns = 3'600'000'000'000;
  layout.max_bytes = 1 << 30;
  ASSERT_TRUE(log.EnsureLayout(layout).ok());
  const Status again = log.EnsureLayout(layout);
  EXPECT_TRUE(again.ok()) << again.ToString();

  LogLayout replicas = layout;
  replicas.replicas = 3;
  Status st = log.EnsureLayout(replicas);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("INGOT_lay_P000"), std::string_view::npos) << st.ToString();
  EXPECT_NE(st.message().find("replicas is 1"), std::string_view::npos) << st.ToString();
  EXPECT_NE(st.message().find("wants 3"), std::string_view::npos) << st.ToString();

  LogLayout age = layout;
  age.max_age_ns = 60'000'000'000;
  st = log.EnsureLayout(age);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("max_age_ns"), std::string_view::npos) << st.ToString();

  // A partition added to an existing layout is created; the old ones are untouched.
  LogLayout more = layout;
  more.partitions = 3;
  EXPECT_TRUE(log.EnsureLayout(more).ok());

  LogLayout bad = layout;
  bad.cluster = "no.dots";
  EXPECT_TRUE(log.EnsureLayout(bad).IsInvalidArgument());
  std::unique_ptr<LogReader> reader;
  EXPECT_TRUE(log.OpenReader(3, 1, &reader).IsInvalidArgument());
}

TEST_F(OneNatsServerTest, ReaderBeforeTheRetainedMessagesIsNotFound) {
  NatsClient* client = client_.get();
  Log& log = client->log();
  LogLayout layout = Layout("ret", 1);
  layout.max_bytes = 20 * 1024;  // keeps a few of the 4 KiB messages below
  ASSERT_TRUE(log.EnsureLayout(layout).ok());
  auto writer = log.NewWriter();
  std::unique_ptr<LogReader> early;
  ASSERT_TRUE(log.OpenReader(0, 1, &early).ok());
  for (int i = 0; i < 20; ++i) writer->Publish(0, fmt::format("ret-{}", i), Payload(0, i, 4096));
  ASSERT_TRUE(writer->Flush(5000).ok());

  LogSeq first = 0;
  LogSeq last = 0;
  ASSERT_TRUE(log.Bounds(0, &first, &last).ok());
  EXPECT_EQ(last, 20u);
  ASSERT_GT(first, 1u);
  std::unique_ptr<LogReader> reader;
  const Status st = log.OpenReader(0, first - 1, &reader);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  ASSERT_TRUE(log.OpenReader(0, first, &reader).ok());
  const std::vector<Read> got = ReadN(*reader, 20 - first + 1);
  ASSERT_EQ(got.size(), 20 - first + 1);
  EXPECT_EQ(got.front().seq, first);

  // A reader opened before retention removed its next message learns it on Next.
  std::vector<LogMessage> out;
  const Status next = early->Next(10, 2000, &out);
  EXPECT_TRUE(next.IsNotFound()) << next.ToString();
  EXPECT_TRUE(out.empty());
}

TEST(NatsLogTest, FlushFailsWhileTheServerIsDownAndSucceedsAfterItsReturn) {
  SKIP_WITHOUT_NATS();
  NatsTestCluster nats(1);
  ASSERT_TRUE(nats.ok());
  auto client = ConnectTo(nats, /*attempt_ms=*/500);
  ASSERT_NE(client, nullptr);
  Log& log = client->log();
  ASSERT_TRUE(log.EnsureLayout(Layout("down", 2)).ok());
  auto writer = log.NewWriter();
  writer->Publish(1, "down-0", "before");
  ASSERT_TRUE(writer->Flush(5000).ok());
  std::unique_ptr<LogReader> follower;
  ASSERT_TRUE(log.OpenReader(1, 1, &follower).ok());
  std::vector<Read> followed = ReadN(*follower, 1);
  ASSERT_EQ(followed.size(), 1u);

  nats.server(0).Kill();
  // Reading while the server is gone: no messages, no error.
  std::vector<LogMessage> out;
  EXPECT_TRUE(follower->Next(10, 300, &out).ok());
  EXPECT_TRUE(out.empty());
  writer->Publish(1, "down-1", "during");
  Status st = writer->Flush(1500);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("partition 1"), std::string_view::npos) << st.ToString();

  ASSERT_TRUE(nats.server(0).Start());
  // The caller's retry of the failed batch, while the connection may still be re-establishing.
  writer->Publish(1, "down-1", "during");
  st = writer->Flush(15000);
  ASSERT_TRUE(st.ok()) << st.ToString();
  // The reconnect is reported on nats.c's callback thread.
  for (int i = 0; i < 100 && client->reconnects() == 0; ++i)
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_GE(client->reconnects(), 1u);
  EXPECT_TRUE(client->connected());
  std::unique_ptr<LogReader> reader;
  ASSERT_TRUE(log.OpenReader(1, 1, &reader).ok());
  const std::vector<Read> got = ReadN(*reader, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].payload, "before");
  EXPECT_EQ(got[1].payload, "during");
  // The reader from before the outage resumes after the message it returned last.
  followed = ReadN(*follower, 1, 15000);
  ASSERT_EQ(followed.size(), 1u);
  EXPECT_EQ(followed[0].seq, 2u);
  EXPECT_EQ(followed[0].payload, "during");
}

TEST_F(OneNatsServerTest, CoordinationPutWatchDelete) {
  NatsClient* client = client_.get();
  std::unique_ptr<Coordination> kv;
  Status st = client->OpenBucket("ingot_leases", 1, &kv);
  ASSERT_TRUE(st.ok()) << st.ToString();

  std::uint64_t rev_a = 0;
  ASSERT_TRUE(kv->Put("node.a", "lease-a", &rev_a).ok());
  EXPECT_GT(rev_a, 0u);

  std::mutex mu;
  std::condition_variable cv;
  std::vector<KvEntry> seen;
  std::unique_ptr<WatchHandle> watch;
  ASSERT_TRUE(kv->Watch(
                    [&](const KvEntry& e) {
                      std::lock_guard<std::mutex> lock(mu);
                      seen.push_back(e);
                      cv.notify_all();
                    },
                    &watch)
                  .ok());
  std::uint64_t rev_b = 0;
  ASSERT_TRUE(kv->Put("node.b", "lease-b", &rev_b).ok());
  EXPECT_GT(rev_b, rev_a);
  ASSERT_TRUE(kv->Delete("node.a").ok());
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return seen.size() >= 3; }));
    EXPECT_EQ(seen[0].key, "node.a");
    EXPECT_EQ(seen[0].value, "lease-a");
    EXPECT_EQ(seen[0].revision, rev_a);
    EXPECT_FALSE(seen[0].deleted);
    EXPECT_EQ(seen[1].key, "node.b");
    EXPECT_EQ(seen[1].value, "lease-b");
    EXPECT_EQ(seen[1].revision, rev_b);
    EXPECT_EQ(seen[2].key, "node.a");
    EXPECT_TRUE(seen[2].deleted);
    EXPECT_GT(seen[2].revision, rev_b);
  }
  watch.reset();  // stops and joins
  std::size_t after_stop = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    after_stop = seen.size();
  }
  ASSERT_TRUE(kv->Put("node.c", "x", nullptr).ok());
  std::this_thread::sleep_for(milliseconds(200));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(seen.size(), after_stop);
  }

  EXPECT_TRUE(kv->Put("bad key", "x", nullptr).IsInvalidArgument());
  std::unique_ptr<Coordination> other;
  st = client->OpenBucket("ingot_leases", 3, &other);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_TRUE(client->OpenBucket("bad.bucket", 1, &other).IsInvalidArgument());
}

// The server leading a partition's R3 stream is SIGKILLed while a writer publishes batches and
// two readers follow: every Flush succeeds in time, and each reader sees every message exactly
// once, in order, across the failover.
TEST(NatsLogTest, SurvivesTheLossOfTheStreamLeader) {
  SKIP_WITHOUT_NATS();
  NatsTestCluster nats(3);
  ASSERT_TRUE(nats.ok());
  auto client = ConnectTo(nats, /*attempt_ms=*/1000);
  ASSERT_NE(client, nullptr);
  Log& log = client->log();
  constexpr PartitionId kPartitions = 2;
  const Status layout = log.EnsureLayout(Layout("fo", kPartitions, 3));
  ASSERT_TRUE(layout.ok()) << layout.ToString();

  constexpr int kBatches = 24;
  constexpr int kKillAfter = 6;
  constexpr int kPerBatch = 8;
  std::atomic<bool> writing{true};
  std::atomic<std::size_t> stored[kPartitions] = {0, 0};
  std::vector<std::vector<std::string>> reads(kPartitions);
  std::vector<std::string> reader_errors(kPartitions);
  std::vector<std::thread> readers;
  // Joins the readers however the test body ends (an ASSERT returns early).
  struct JoinReaders {
    std::atomic<bool>& writing;
    std::vector<std::thread>& threads;
    ~JoinReaders() {
      writing = false;
      for (std::thread& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } join_readers{writing, readers};
  for (PartitionId p = 0; p < kPartitions; ++p) {
    readers.emplace_back([&, p] {
      std::unique_ptr<LogReader> reader;
      Status st = log.OpenReader(p, 1, &reader);
      if (!st.ok()) {
        reader_errors[p] = st.ToString();
        return;
      }
      LogSeq expected = 1;
      std::vector<LogMessage> out;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(50);
      while (std::chrono::steady_clock::now() < deadline) {
        if (!writing.load() && reads[p].size() >= stored[p].load()) return;
        st = reader->Next(32, 300, &out);
        if (!st.ok()) {
          reader_errors[p] = st.ToString();
          return;
        }
        for (const LogMessage& m : out) {
          if (m.seq != expected) {
            reader_errors[p] = fmt::format("seq {}, expected {}", m.seq, expected);
            return;
          }
          ++expected;
          reads[p].emplace_back(m.payload);
        }
      }
      reader_errors[p] = fmt::format("timed out after {} messages", reads[p].size());
    });
  }

  auto writer = log.NewWriter();
  std::vector<std::vector<std::string>> written(kPartitions);
  std::string killed;
  int max_flush_ms = 0;
  for (int b = 0; b < kBatches; ++b) {
    if (b == kKillAfter) {
      ASSERT_TRUE(client->PartitionLeader(0, &killed).ok());
      const int index = nats.IndexOf(killed);
      ASSERT_GE(index, 0) << "leader '" << killed << "'";
      nats.server(index).Kill();
    }
    for (int i = 0; i < kPerBatch; ++i) {
      for (PartitionId p = 0; p < kPartitions; ++p) {
        const int n = b * kPerBatch + i;
        written[p].push_back(Payload(p, n, 16 * 1024));
        writer->Publish(p, fmt::format("fo-{}-{}", p, n), written[p].back());
      }
    }
    const auto start = std::chrono::steady_clock::now();
    const Status st = writer->Flush(15000);
    max_flush_ms =
        std::max(max_flush_ms, static_cast<int>(std::chrono::duration_cast<milliseconds>(
                                                    std::chrono::steady_clock::now() - start)
                                                    .count()));
    ASSERT_TRUE(st.ok()) << "batch " << b << ": " << st.ToString();
    for (PartitionId p = 0; p < kPartitions; ++p) stored[p] = written[p].size();
  }
  writing = false;
  for (std::thread& t : readers) t.join();
  std::string leader_after;
  EXPECT_TRUE(client->PartitionLeader(0, &leader_after).ok());
  EXPECT_NE(leader_after, killed);
  std::cerr << "killed " << killed << ", new leader " << leader_after << ", slowest flush "
            << max_flush_ms << " ms, reconnects " << client->reconnects() << "\n";
  for (PartitionId p = 0; p < kPartitions; ++p) {
    EXPECT_EQ(reader_errors[p], "") << "partition " << p;
    // Exactly once; batches in Flush order; within a batch a retried message may land after
    // later ones that were stored at the first attempt.
    ASSERT_EQ(reads[p].size(), written[p].size()) << "partition " << p;
    std::size_t moved = 0;
    for (std::size_t begin = 0; begin < reads[p].size(); begin += kPerBatch) {
      std::vector<std::string> got(reads[p].begin() + begin, reads[p].begin() + begin + kPerBatch);
      std::vector<std::string> want(written[p].begin() + begin,
                                    written[p].begin() + begin + kPerBatch);
      for (std::size_t i = 0; i < got.size(); ++i) moved += got[i] != want[i] ? 1 : 0;
      std::sort(got.begin(), got.end());
      std::sort(want.begin(), want.end());
      ASSERT_TRUE(got == want) << "partition " << p << ", batch " << begin / kPerBatch;
    }
    std::cerr << "partition " << p << ": " << moved << " message(s) reordered by retries\n";
    LogSeq first = 0;
    LogSeq last = 0;
    ASSERT_TRUE(log.Bounds(p, &first, &last).ok());
    EXPECT_EQ(last, written[p].size()) << "partition " << p;
  }
}

}  // namespace
}  // namespace ingot::cluster
