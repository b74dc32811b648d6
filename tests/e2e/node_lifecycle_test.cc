// End-to-end: the real ingotd binary starts, serves /health, refuses a second instance on the same
// data dir, reports a port in use, and stops cleanly on SIGTERM and SIGINT.
#include <signal.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/e2e/node_process.h"

namespace ingot::testing {
namespace {

TEST(NodeLifecycle, HealthThenCleanSigterm) {
  TempDir dir;
  NodeProcess node(dir.path() + "/data");
  ASSERT_TRUE(node.ok()) << node.log();
  HttpResult health = HttpGet(node.http_port(), "/health");
  EXPECT_EQ(health.status, 200) << health.error;
  EXPECT_NE(health.body.find("ok"), std::string::npos);
  EXPECT_EQ(HttpGet(node.http_port(), "/no/such/thing").status, 404);
  EXPECT_EQ(node.Stop(SIGTERM), 0) << node.log();
  EXPECT_NE(node.log().find("stopped cleanly"), std::string::npos) << node.log();
}

TEST(NodeLifecycle, SigintAlsoStopsCleanlyAndDataDirIsReusable) {
  TempDir dir;
  {
    NodeProcess node(dir.path() + "/data");
    ASSERT_TRUE(node.ok()) << node.log();
    EXPECT_EQ(node.Stop(SIGINT), 0) << node.log();
  }
  NodeProcess again(dir.path() + "/data");
  ASSERT_TRUE(again.ok()) << again.log();
  EXPECT_EQ(again.Stop(SIGTERM), 0);
}

TEST(NodeLifecycle, SecondInstanceOnSameDataDirFailsWithLockError) {
  TempDir dir;
  NodeProcess first(dir.path() + "/data");
  ASSERT_TRUE(first.ok()) << first.log();
  NodeProcess second(dir.path() + "/data");
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(second.WaitExit(), 1);
  EXPECT_NE(second.log().find("is locked by another ingotd"), std::string::npos) << second.log();
  EXPECT_NE(second.log().find(std::to_string(first.pid())), std::string::npos) << second.log();
  // The first one is unaffected.
  EXPECT_EQ(HttpGet(first.http_port(), "/health").status, 200);
  EXPECT_EQ(first.Stop(SIGTERM), 0);
}

TEST(NodeLifecycle, PortInUseIsNamed) {
  TempDir dir;
  NodeProcess first(dir.path() + "/a");
  ASSERT_TRUE(first.ok()) << first.log();
  const std::string busy = "127.0.0.1:" + std::to_string(first.http_port());
  NodeProcess second(dir.path() + "/b", {"--set", "query.http_listen=" + busy});
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(second.WaitExit(), 1);
  EXPECT_NE(second.log().find("port " + std::to_string(first.http_port())), std::string::npos)
      << second.log();
  EXPECT_EQ(first.Stop(SIGTERM), 0);
}

TEST(NodeLifecycle, BadConfigStopsStartupNamingKey) {
  TempDir dir;
  NodeProcess node(dir.path() + "/data", {"--set", "storage.wal_sync=sometimes"});
  EXPECT_FALSE(node.ok());
  EXPECT_EQ(node.WaitExit(), 2);
  EXPECT_NE(node.log().find("storage.wal_sync"), std::string::npos) << node.log();
  EXPECT_NE(node.log().find("sometimes"), std::string::npos) << node.log();
}

TEST(NodeLifecycle, CpuProfileIsWritten) {
  TempDir dir;
  const std::string profile = dir.path() + "/cpu.prof";
  NodeProcess node(dir.path() + "/data", {"--cpuprofile", profile});
#ifdef INGOT_HAVE_PROFILER
  ASSERT_TRUE(node.ok()) << node.log();
  EXPECT_EQ(node.Stop(SIGTERM), 0);
  EXPECT_TRUE(std::filesystem::exists(profile)) << node.log();
#else
  // A build without gperftools says so instead of silently running unprofiled.
  EXPECT_FALSE(node.ok());
  EXPECT_EQ(node.WaitExit(), 2);
  EXPECT_NE(node.log().find("INGOT_PROFILER"), std::string::npos) << node.log();
#endif
}

}  // namespace
}  // namespace ingot::testing
