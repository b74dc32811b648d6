// Helpers shared by the storage tests: temporary directories and small option sets.
#pragma once

#include <cstdint>
#include <string>

#include "config/options.h"

namespace ingot::testing {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
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

// Options for a test store in `dir`: small cache, WAL sync "none" unless given.
StorageOptions TestOptions(const std::string& dir, const std::string& wal_sync = "none");

}  // namespace ingot::testing
