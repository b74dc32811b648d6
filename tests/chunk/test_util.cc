#include "tests/chunk/test_util.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "config/logging.h"

namespace ingot::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/ingot-chunk-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

StorageOptions TestOptions(const std::string& dir, const std::string& wal_sync) {
  StorageOptions o;
  o.data_dir = dir;
  o.wal_sync = wal_sync;
  o.block_cache_bytes = 8 << 20;
  o.checkpoint_interval_ms = 3'600'000;  // tests checkpoint explicitly
  return o;
}

namespace {
// The suites provoke corrupt and torn data on purpose; keep their expected errors out of the log.
class QuietStorageLog : public ::testing::Environment {
 public:
  void SetUp() override { Logger("storage")->set_level(spdlog::level::critical); }
};
[[maybe_unused]] ::testing::Environment* const kQuietLog =
    ::testing::AddGlobalTestEnvironment(new QuietStorageLog);
}  // namespace

}  // namespace ingot::testing
