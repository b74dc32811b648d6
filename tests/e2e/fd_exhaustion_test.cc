// A flood of idle connections against a node with a small descriptor limit: the connections past
// the node's share of descriptors are refused with 503, so storage never runs out of descriptors,
// writes that create files keep working, every acknowledged point is kept and the node stops
// cleanly.
#include <dirent.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/node_process.h"

namespace ingot::testing {
namespace {

int OpenDescriptors(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n;
}

// `count` lines of series fd_v{s=...}, 10 s apart, from `start_s`.
std::string Lines(int series, int points, std::int64_t start_s) {
  std::string out;
  for (int p = 0; p < points; ++p) {
    for (int s = 0; s < series; ++s) {
      out += "fd,s=" + std::to_string(s) + " v=" + std::to_string(p) + " " +
             std::to_string(start_s + p * 10) + "\n";
    }
  }
  return out;
}

double Count(unsigned short port, std::int64_t at_s) {
  const HttpResult r = HttpGet(
      port, "/api/v1/query?query=sum(count_over_time(fd_v%5B100d%5D))&time=" +
                std::to_string(at_s));
  const auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || j["data"]["result"].empty()) return 0;
  return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
}

TEST(FdExhaustion, ConnectionFloodIsRefusedAndWritesKeepWorking) {
  TempDir dir;
  constexpr unsigned kLimit = 400;
  // Configured caps far above what the descriptor limit allows: ingotd lowers them.
  NodeProcess node(dir.path() + "/data",
                   {"--set", "query.max_connections=100000", "--set",
                    "ingest.max_connections=100000", "--set", "storage.wal_sync=always",
                    "--set", "ingest.shards=2", "--set", "query.write_workers=2", "--set",
                    "query.workers=2"},
                   kLimit);
  ASSERT_TRUE(node.ok()) << node.log();
  EXPECT_NE(node.log().find("connections capped at"), std::string::npos) << node.log();
  const unsigned short http = node.http_port();
  constexpr std::int64_t kStart = 1'700'000'000;
  std::int64_t acknowledged = 0;

  HttpConnection writer(http);
  ASSERT_TRUE(writer.connected());
  ASSERT_EQ(writer.Post("/write?precision=s", Lines(20, 100, kStart)).status, 204);
  acknowledged += 20 * 100;

  // More idle clients than the node has descriptors.
  std::vector<std::unique_ptr<HttpConnection>> idle;
  for (int i = 0; i < 450; ++i) {
    idle.push_back(std::make_unique<HttpConnection>(http));
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // The last ones are past the cap: answered 503 at once, then closed.
  const HttpResult refused = idle.back()->Read();
  EXPECT_EQ(refused.status, 503) << refused.error;
  EXPECT_NE(refused.body.find("query.max_connections"), std::string::npos) << refused.body;
  EXPECT_EQ(refused.retry_after, "1");
  EXPECT_LT(OpenDescriptors(node.pid()), static_cast<int>(kLimit) - 32);

  // Writes that seal chunks and merges that write files keep working meanwhile.
  for (int round = 0; round < 12; ++round) {
    const HttpResult r =
        writer.Post("/write?precision=s", Lines(20, 600, kStart + (100 + round * 600) * 10));
    ASSERT_EQ(r.status, 204) << r.body << r.error;
    acknowledged += 20 * 600;
    if (round % 3 == 2) {
      ASSERT_EQ(writer.Post("/internal/force_merge", "").status, 200);
    }
  }
  idle.clear();
  ASSERT_EQ(HttpPost(http, "/write?precision=s", Lines(20, 50, kStart + 9000 * 10)).status, 204);
  acknowledged += 20 * 50;
  EXPECT_EQ(Count(http, kStart + 10000 * 10), static_cast<double>(acknowledged));

  // The accept loop never ran out of descriptors, or backed off and logged rarely if it did.
  const std::string log = node.log();
  std::size_t accept_lines = 0;
  for (std::size_t pos = log.find("accept failed"); pos != std::string::npos;
       pos = log.find("accept failed", pos + 1)) {
    ++accept_lines;
  }
  EXPECT_LE(accept_lines, 10u) << log;
  ASSERT_EQ(node.Stop(SIGTERM), 0) << node.log();

  NodeProcess again(dir.path() + "/data");
  ASSERT_TRUE(again.ok()) << again.log();
  EXPECT_EQ(Count(again.http_port(), kStart + 10000 * 10), static_cast<double>(acknowledged));
}

}  // namespace
}  // namespace ingot::testing
