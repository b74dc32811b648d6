// The node's operations endpoints through the router (no sockets), over a real Storage.
#include "node/ops_routes.h"

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/query/query_test_util.h"

namespace ingot {
namespace {

using testing::kSec;
using testing::kT0;
using testing::Points;
using testing::Response;

class OpsRoutesTest : public testing::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    RegisterOperationsRoutes(*router_, *storage_, dir_.path(), &stopping_);
    Points a;
    for (int i = 0; i < 10; ++i) a.emplace_back(kT0 + i * 10 * kSec, i);
    for (const char* host : {"a", "b"}) Add("cpu", {{"host", host}}, "usage", a);
    Add("mem", {{"host", "a"}}, "free", a);
    Add("req", {{"host", "a"}}, "total", {{kT0, 0}, {kT0 + 10 * kSec, 10}, {kT0 + 20 * kSec, 20},
                                          {kT0 + 30 * kSec, 5}, {kT0 + 40 * kSec, 15}});
  }
  static void ExpectError(const Response& r, int status, const std::string& type,
                          const std::string& message_part) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.body.rfind("{\"status\":\"error\",\"errorType\":\"" + type + "\",\"error\":", 0),
              0u)
        << r.body;
    EXPECT_NE(r.body.find(message_part), std::string::npos) << r.body;
  }

  std::atomic<bool> stopping_{false};
};

TEST_F(OpsRoutesTest, ForceMergeMergesLateChunksAndKeepsTheAnswer) {
  // 1025 points seal a chunk; then points older than it (late) replace and fill in.
  Points points;
  for (int i = 0; i < 1025; ++i) points.push_back({kT0 + i * 2 * kSec, 1.0});
  const SeriesId sid = Add("late", {{"host", "a"}}, "v", points);
  Add("late", {{"host", "a"}}, "v", {{kT0 + 10 * kSec, 5.0}, {kT0 + 11 * kSec, 7.0}});
  ASSERT_TRUE(storage_->Checkpoint().ok());  // late buffer -> late chunk
  ASSERT_TRUE(storage_->MayHaveLateData(sid));
  const std::string q = "/api/v1/query?query=sum_over_time(late_v[1h])&time=" +
                        std::to_string((kT0 + 3000 * kSec) / kSec);
  const Response before = Get(q);
  ASSERT_EQ(before.status, 200) << before.body;
  // 1025 ones, one replaced by 5, plus a new 7.
  EXPECT_NE(before.body.find("\"1036\""), std::string::npos) << before.body;
  const Response merged = Post("/internal/force_merge", "");
  ASSERT_EQ(merged.status, 200) << merged.body;
  const nlohmann::json j = nlohmann::json::parse(merged.body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << merged.body;
  EXPECT_GT(j["data"]["late_points_merged"].get<std::uint64_t>(), 0u);
  EXPECT_FALSE(storage_->MayHaveLateData(sid));
  EXPECT_EQ(Get(q).body, before.body);
  EXPECT_EQ(Get("/internal/force_merge").status, 405);
}

TEST_F(OpsRoutesTest, OperationsEndpoints) {
  const Response health = Get("/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "{\"status\":\"ok\"}\n");
  Get("/api/v1/query?query=1");
  const Response metrics = Get("/metrics");
  EXPECT_EQ(metrics.status, 200);
  for (const char* name :
       {"ingot_queries_total{endpoint=\"query\"}", "ingot_query_duration_seconds_bucket",
        "ingot_head_points 35", "ingot_head_series 4", "ingot_compression_ratio",
        "ingot_points_accepted_total", "ingot_wal_fsync_seconds", "ingot_rocksdb_memtable_bytes"}) {
    EXPECT_NE(metrics.body.find(name), std::string::npos) << name;
  }
  ExpectError(Get("/debug/pprof/profile?seconds=abc"), 400, "bad_data",
              R"(invalid parameter \"seconds\")");
  ExpectError(Get("/debug/pprof/profile?seconds=301"), 400, "bad_data",
              R"(invalid parameter \"seconds\")");
#ifdef INGOT_HAVE_PROFILER
  const Response profile = Get("/debug/pprof/profile?seconds=1");
  EXPECT_EQ(profile.status, 200);
  EXPECT_EQ(profile.content_type, "application/octet-stream");
  EXPECT_FALSE(profile.body.empty());
#else
  EXPECT_EQ(Get("/debug/pprof/profile?seconds=1").status, 501);
#endif
}

#ifdef INGOT_HAVE_PROFILER
// Profiles go to a private directory of the data dir and are removed; a shutdown ends a long
// profile at once instead of holding a worker for its whole length.
TEST_F(OpsRoutesTest, ProfileStaysInTheDataDirAndEndsAtShutdown) {
  const std::string dir = dir_.path() + "/profiles";
  ASSERT_EQ(Get("/debug/pprof/profile?seconds=1").status, 200);
  struct stat st {};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  std::thread stopper([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stopping_ = true;
  });
  const auto begin = std::chrono::steady_clock::now();
  const Response cut = Get("/debug/pprof/profile?seconds=300");
  stopper.join();
  EXPECT_EQ(cut.status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(60));
}
#endif

}  // namespace
}  // namespace ingot
