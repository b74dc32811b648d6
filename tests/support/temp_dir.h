// Helpers every test suite shares: temporary directories and storage options for tests.
#pragma once

#include <string>

#include "config/options.h"

namespace ingot::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Options for a test store in `data_dir`: small block cache, checkpoints only when a test asks,
// WAL sync "none" unless given.
StorageOptions TestStorageOptions(const std::string& data_dir,
                                  const std::string& wal_sync = "none");

}  // namespace ingot::testing
