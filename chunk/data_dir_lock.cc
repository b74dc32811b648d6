#include "chunk/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace ingot {

Status DataDirLock::Acquire(const std::string& dir, std::unique_ptr<DataDirLock>* lock) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::IOError("cannot create data dir '" + dir + "': " + ec.message());
  }
  const std::string path = dir + "/ingotd.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IOError("cannot open lock file '" + path + "': " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[32] = {0};
    ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    std::string who = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "unknown";
    while (!who.empty() && (who.back() == '\n' || who.back() == '\0')) who.pop_back();
    if (err == EWOULDBLOCK) {
      return Status::Busy("data dir '" + dir + "' is locked by another ingotd (pid " + who +
                          "); stop it or choose another --data-dir");
    }
    return Status::IOError("cannot lock '" + path + "': " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock itself holds; the pid is only informational.
  }
  lock->reset(new DataDirLock(fd));
  return Status::OK();
}

DataDirLock::~DataDirLock() {
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

}  // namespace ingot
