#include "cluster/positions.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ingot::cluster {

Status Positions::Open(const std::string& data_dir, std::unique_ptr<Positions>* out) {
  const std::filesystem::path dir = std::filesystem::path(data_dir) / "cluster";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("creating " + dir.string() + ": " + ec.message());
  std::unique_ptr<Positions> positions(new Positions((dir / "positions").string()));
  std::ifstream in(positions->path_);
  if (!in.is_open() && std::filesystem::exists(positions->path_, ec)) {
    return Status::IOError("cannot read " + positions->path_);
  }
  std::string line;
  int number = 0;
  MutexLock lock(positions->mu_);
  while (in && std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    PartitionId p = 0;
    LogSeq seq = 0;
    const char* end = line.data() + line.size();
    auto [mid, ec1] = std::from_chars(line.data(), end, p);
    if (ec1 != std::errc() || mid == end || *mid != ' ') {
      return Status::Corruption(positions->path_ + " line " + std::to_string(number) +
                                ": expected \"<partition> <sequence>\"");
    }
    auto [last, ec2] = std::from_chars(mid + 1, end, seq);
    if (ec2 != std::errc() || last != end) {
      return Status::Corruption(positions->path_ + " line " + std::to_string(number) +
                                ": expected \"<partition> <sequence>\"");
    }
    positions->current_[p] = seq;
  }
  if (in.bad()) return Status::IOError("reading " + positions->path_);
  positions->previous_ = positions->current_;
  *out = std::move(positions);
  return Status::OK();
}

LogSeq Positions::Get(PartitionId p) const {
  MutexLock lock(mu_);
  auto it = current_.find(p);
  return it == current_.end() ? 0 : it->second;
}

void Positions::Set(PartitionId p, LogSeq seq) {
  MutexLock lock(mu_);
  current_[p] = seq;
}

Status Positions::Persist() { return PersistAs(/*current=*/false); }

Status Positions::PersistCurrent() { return PersistAs(/*current=*/true); }

Status Positions::PersistAs(bool current) {
  std::unordered_map<PartitionId, LogSeq> write;
  {
    MutexLock lock(mu_);
    write = current ? current_ : previous_;
    previous_ = current_;
  }
  return Write(write);
}

Status Positions::Write(const std::unordered_map<PartitionId, LogSeq>& positions) {
  std::ostringstream text;
  text << "# partition, last log sequence applied\n";
  for (const auto& [p, seq] : positions) text << p << ' ' << seq << '\n';
  const std::string body = text.str();
  const std::string tmp = path_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError("opening " + tmp + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < body.size()) {
    const ssize_t n = ::write(fd, body.data() + done, body.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return Status::IOError("writing " + tmp + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IOError("syncing " + tmp + ": " + std::strerror(err));
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    return Status::IOError("renaming " + tmp + ": " + std::strerror(errno));
  }
  return Status::OK();
}

}  // namespace ingot::cluster
