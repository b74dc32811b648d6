// DataDirLock: an exclusive advisory lock on a data directory, held for the life of the node.
//
// A second ingotd on the same directory fails to acquire it and reports the pid of the holder,
// before it touches the WAL or RocksDB. The lock is released by the destructor or by process exit
// (flock locks die with the process, so a crash never leaves a stale lock).
//
// Thread safety: not thread-safe; owned by the node's main.
#pragma once

#include <memory>
#include <string>

#include "config/status.h"

namespace ingot {

class DataDirLock {
 public:
  // Creates `dir` (and parents) if missing and locks `dir/ingotd.lock`.
  static Status Acquire(const std::string& dir, std::unique_ptr<DataDirLock>* lock);
  ~DataDirLock();

  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace ingot
