// End-to-end: the real ingotd binary starts, serves /health, refuses a second instance on the same
// data dir, reports a port in use, stops cleanly on SIGTERM and SIGINT, and checks a stopped node's
// data directory offline (--check).
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "tests/e2e/node_process.h"
#include "tests/support/file_damage.h"

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

struct CheckRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CheckRun RunCheck(const std::string& data_dir) {
  std::string command = IngotdPath();
  command += " --data-dir '";
  command += data_dir;
  command += "' --check 2>&1";
  CheckRun run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) run.output.append(buf, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

TEST(NodeLifecycle, CheckFindsDamageInAStoppedNodesDataDir) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  {
    NodeProcess node(data);
    ASSERT_TRUE(node.ok()) << node.log();
    // 20 series of 3,000 noisy points: sealed chunks of a few KiB each.
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> noise(0, 1000);
    for (int s = 0; s < 20; ++s) {
      std::string body;
      for (int i = 0; i < 3000; ++i) {
        body += "cpu,host=h";
        body += std::to_string(s);
        body += " usage=";
        body += std::to_string(noise(rng));
        body += ' ';
        body += std::to_string(1'700'000'000'000'000'000 + i * 1'000'000'000LL);
        body += '\n';
      }
      ASSERT_EQ(HttpPost(node.http_port(), "/write", body).status, 204);
    }
    // A running node holds the directory: the check refuses to run.
    const CheckRun busy = RunCheck(data);
    EXPECT_EQ(busy.exit_code, 2) << busy.output;
    EXPECT_NE(busy.output.find("locked"), std::string::npos) << busy.output;
    ASSERT_EQ(node.Stop(SIGTERM), 0) << node.log();
  }
  const CheckRun clean = RunCheck(data);
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_NE(clean.output.find("series: 20\n"), std::string::npos) << clean.output;
  EXPECT_NE(clean.output.find("points readable: 60000\n"), std::string::npos) << clean.output;
  EXPECT_NE(clean.output.find("result: clean"), std::string::npos) << clean.output;

  // One flipped byte a third of the way into the largest table file.
  std::uint64_t largest = 0;
  const std::string target = LargestFile(data + "/db", ".sst", &largest);
  ASSERT_GT(largest, 50'000u);
  ASSERT_TRUE(FlipByte(target, largest / 3));
  const CheckRun damaged = RunCheck(data);
  EXPECT_EQ(damaged.exit_code, 1) << damaged.output;
  EXPECT_NE(damaged.output.find("result: DAMAGED"), std::string::npos) << damaged.output;
  EXPECT_NE(damaged.output.find("damaged: "), std::string::npos) << damaged.output;
  EXPECT_NE(damaged.output.find("cpu_usage,host=h"), std::string::npos) << damaged.output;
}

}  // namespace
}  // namespace ingot::testing
