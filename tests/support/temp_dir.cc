#include "tests/support/temp_dir.h"

#include <cstdlib>
#include <filesystem>

namespace ingot::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/ingot-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

StorageOptions TestStorageOptions(const std::string& data_dir, const std::string& wal_sync) {
  StorageOptions o;
  o.data_dir = data_dir;
  o.wal_sync = wal_sync;
  o.block_cache_bytes = 8 << 20;
  o.checkpoint_interval_ms = 3'600'000;
  return o;
}

}  // namespace ingot::testing
