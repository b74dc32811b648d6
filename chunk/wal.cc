#include "chunk/wal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <xxhash.h>

#include "chunk/storage_metrics.h"
#include "chunk/wal_format.h"
#include "config/logging.h"

namespace ingot {

namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

std::string SegmentPath(const std::string& dir, std::uint64_t seq) {
  char name[32];
  std::snprintf(name, sizeof name, "%020" PRIu64 ".wal", seq);
  return dir + "/" + name;
}

bool WriteAll(int fd, const struct iovec* iov, int iovcnt) {
  struct iovec local[2];
  std::copy(iov, iov + iovcnt, local);
  int first = 0;
  while (first < iovcnt) {
    const ssize_t n = ::writev(fd, local + first, iovcnt - first);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    auto left = static_cast<std::size_t>(n);
    while (first < iovcnt && left >= local[first].iov_len) {
      left -= local[first].iov_len;
      ++first;
    }
    if (first < iovcnt) {
      local[first].iov_base = static_cast<char*>(local[first].iov_base) + left;
      local[first].iov_len -= left;
    }
  }
  return true;
}

bool SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// True if a complete, checksummed record starts at `pos`.
bool ValidRecordAt(const std::uint8_t* data, std::size_t size, std::size_t pos,
                   std::uint32_t* length) {
  if (size - pos < kWalRecordHeaderBytes) return false;
  std::uint32_t magic, len;
  std::uint64_t checksum;
  std::memcpy(&magic, data + pos, 4);
  std::memcpy(&len, data + pos + 4, 4);
  std::memcpy(&checksum, data + pos + 8, 8);
  if (magic != kWalRecordMagic || len > kWalMaxRecordBytes) return false;
  if (len > size - pos - kWalRecordHeaderBytes) return false;
  if (XXH64(data + pos + kWalRecordHeaderBytes, len, len) != checksum) return false;
  *length = len;
  return true;
}

}  // namespace

Status ParseWalSyncPolicy(std::string_view text, WalSyncPolicy* policy) {
  if (text == "always") {
    *policy = WalSyncPolicy::kAlways;
  } else if (text == "interval") {
    *policy = WalSyncPolicy::kInterval;
  } else if (text == "none") {
    *policy = WalSyncPolicy::kNone;
  } else {
    return Status::InvalidArgument("storage.wal_sync '" + std::string(text) +
                                   "': expected always, interval or none");
  }
  return Status::OK();
}

Status Wal::Open(const std::string& dir, WalSyncPolicy policy, std::uint64_t first_seq,
                 std::unique_ptr<Wal>* wal) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("create WAL dir '" + dir + "': " + ec.message());
  std::unique_ptr<Wal> w(new Wal(dir, policy));
  INGOT_RETURN_IF_ERROR(w->OpenSegment(first_seq));
  *wal = std::move(w);
  return Status::OK();
}

Wal::~Wal() { (void)Close(); }

Status Wal::OpenSegment(std::uint64_t seq) {
  int fd = -1;
  INGOT_RETURN_IF_ERROR(CreateSegmentFile(seq, &fd));
  Install(fd, seq);
  return Status::OK();
}

Status Wal::CreateSegmentFile(std::uint64_t seq, int* out_fd) {
  const std::string path = SegmentPath(dir_, seq);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    Status st = Status::IOError(Errno("create WAL segment", path));
    ::unlink(path.c_str());  // O_TRUNC on an existing file may fail after creating it
    return st;
  }
  std::uint8_t header[kWalFileHeaderBytes] = {};
  std::memcpy(header, kWalFileMagic, 8);
  std::memcpy(header + 8, &kWalFormatVersion, 4);
  struct iovec iov = {header, sizeof header};
  // The header and the directory entry are synced so that a segment never vanishes or shows up
  // headerless after a crash once records were acknowledged from it.
  if (!WriteAll(fd, &iov, 1) || ::fdatasync(fd) != 0 || !SyncDir(dir_)) {
    Status st = Status::IOError(Errno("initialize WAL segment", path));
    ::close(fd);
    ::unlink(path.c_str());
    return st;
  }
  *out_fd = fd;
  return Status::OK();
}

void Wal::Install(int fd, std::uint64_t seq) {
  MutexLock lock(mu_);
  fd_ = fd;
  seq_ = seq;
  file_bytes_ = kWalFileHeaderBytes;
  bytes_since_roll_ = 0;
  dirty_ = false;
}

Status Wal::SyncFd(int fd, std::uint64_t seq) {
  const auto start = std::chrono::steady_clock::now();
  const int rc = ::fdatasync(fd);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  Metrics().wal_fsync_seconds->Observe(took.count());
  if (rc != 0) return Status::IOError(Errno("fdatasync WAL segment", SegmentPath(dir_, seq)));
  return Status::OK();
}

Status Wal::Append(std::span<const std::uint8_t> payload) {
  if (payload.size() > kWalMaxRecordBytes) {
    return Status::InvalidArgument("WAL record of " + std::to_string(payload.size()) +
                                   " bytes exceeds " + std::to_string(kWalMaxRecordBytes));
  }
  std::uint8_t header[kWalRecordHeaderBytes];
  const auto len = static_cast<std::uint32_t>(payload.size());
  const std::uint64_t checksum = XXH64(payload.data(), payload.size(), len);
  std::memcpy(header, &kWalRecordMagic, 4);
  std::memcpy(header + 4, &len, 4);
  std::memcpy(header + 8, &checksum, 8);
  struct iovec iov[2] = {{header, sizeof header},
                         {const_cast<std::uint8_t*>(payload.data()), payload.size()}};
  int fd;
  {
    MutexLock lock(mu_);
    if (!sync_error_.ok()) return sync_error_;
    if (fd_ < 0) return Status::IOError("WAL '" + dir_ + "' is closed");
    fd = fd_;
    if (!WriteAll(fd, iov, 2)) {
      Status st = Status::IOError(Errno("append to WAL segment", SegmentPath(dir_, seq_)));
      // Cut off a partial record so that later records do not follow garbage.
      if (::ftruncate(fd, static_cast<off_t>(file_bytes_)) == 0) {
        ::lseek(fd, static_cast<off_t>(file_bytes_), SEEK_SET);
      }
      Metrics().write_errors->Add();
      return st;
    }
    dirty_ = true;
  }
  const std::uint64_t n = kWalRecordHeaderBytes + payload.size();
  file_bytes_ += n;
  bytes_since_roll_ += n;
  Metrics().wal_bytes_written->Add(n);
  if (policy_ == WalSyncPolicy::kAlways) {
    // Only this writer closes fd_, so it stays valid outside the lock.
    {
      MutexLock lock(mu_);
      dirty_ = false;
    }
    Status st = SyncFd(fd, seq_);
    if (!st.ok()) {
      Metrics().write_errors->Add();
      MutexLock lock(mu_);
      sync_error_ = st;
      return st;
    }
  }
  return Status::OK();
}

Status Wal::SyncIfDirty() {
  int fd;
  std::uint64_t seq;
  {
    MutexLock lock(mu_);
    if (!dirty_ || fd_ < 0 || syncing_) return Status::OK();
    fd = fd_;
    seq = seq_;
    dirty_ = false;
    syncing_ = true;
  }
  Status st = SyncFd(fd, seq);
  MutexLock lock(mu_);
  syncing_ = false;
  if (!st.ok()) {
    Metrics().write_errors->Add();
    sync_error_ = st;
  }
  sync_done_.NotifyAll();
  return st;
}

Status Wal::CloseCurrent() {
  int fd;
  {
    MutexLock lock(mu_);
    sync_done_.Wait(lock, [this] {
      mu_.AssertHeld();
      return !syncing_;
    });
    fd = fd_;
    fd_ = -1;
  }
  if (fd < 0) return Status::OK();
  Status st;
  if (policy_ != WalSyncPolicy::kNone) st = SyncFd(fd, seq_);
  if (::close(fd) != 0 && st.ok()) {
    st = Status::IOError(Errno("close WAL segment", SegmentPath(dir_, seq_)));
  }
  return st;
}

Status Wal::Roll(std::uint64_t* previous_seq) {
  const std::uint64_t prev = seq_;
  // The next segment exists before the current one is closed: when it cannot be made (out of
  // descriptors, disk full) the log keeps appending to the current one and the roll is retried.
  int fd = -1;
  INGOT_RETURN_IF_ERROR(CreateSegmentFile(prev + 1, &fd));
  Status st = CloseCurrent();
  Install(fd, prev + 1);
  INGOT_RETURN_IF_ERROR(st);
  *previous_seq = prev;
  return Status::OK();
}

Status Wal::DeleteSegmentsUpTo(std::uint64_t seq) {
  std::vector<WalSegment> segments;
  INGOT_RETURN_IF_ERROR(ListWalSegments(dir_, &segments));
  for (const WalSegment& s : segments) {
    if (s.seq > seq) break;
    if (::unlink(s.path.c_str()) != 0 && errno != ENOENT) {
      return Status::IOError(Errno("delete WAL segment", s.path));
    }
  }
  SyncDir(dir_);
  return Status::OK();
}

Status Wal::Close() { return CloseCurrent(); }

Status ListWalSegments(const std::string& dir, std::vector<WalSegment>* segments) {
  segments->clear();
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return Status::OK();
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != 24 || name.compare(20, 4, ".wal") != 0) continue;
    std::uint64_t seq = 0;
    bool digits = true;
    for (std::size_t i = 0; i < 20; ++i) {
      if (name[i] < '0' || name[i] > '9') digits = false;
      seq = seq * 10 + static_cast<std::uint64_t>(name[i] - '0');
    }
    if (digits) segments->push_back({seq, entry.path().string()});
  }
  if (ec) return Status::IOError("list WAL dir '" + dir + "': " + ec.message());
  std::sort(segments->begin(), segments->end(),
            [](const WalSegment& a, const WalSegment& b) { return a.seq < b.seq; });
  return Status::OK();
}

Status ReadWalSegment(const std::string& path,
                      const std::function<Status(std::span<const std::uint8_t>)>& fn,
                      WalReadStats* stats) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(Errno("open WAL segment", path));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = Status::IOError(Errno("stat WAL segment", path));
    ::close(fd);
    return s;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size < kWalFileHeaderBytes) {
    // Crashed while creating the segment: nothing in it was ever acknowledged.
    ::close(fd);
    if (size > 0) stats->torn_tail_bytes += size;
    return Status::OK();
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return Status::IOError(Errno("map WAL segment", path));
  const auto* data = static_cast<const std::uint8_t*>(map);
  auto log = Logger("storage");
  Status result;
  if (std::memcmp(data, kWalFileMagic, 8) != 0) {
    // A damaged header costs the header, not the segment: every record carries its own magic
    // and checksum, so the records after it are read (and a file that is no WAL yields none).
    log->error("WAL segment '{}' has a damaged header; reading the records that validate", path);
    stats->corrupt_records++;
    stats->skipped_bytes += kWalFileHeaderBytes;
    Metrics().wal_records_corrupt->Add();
  }
  {
    std::size_t pos = kWalFileHeaderBytes;
    while (pos < size) {
      std::uint32_t len = 0;
      if (ValidRecordAt(data, size, pos, &len)) {
        stats->records++;
        result = fn(std::span<const std::uint8_t>(data + pos + kWalRecordHeaderBytes, len));
        if (!result.ok()) break;
        pos += kWalRecordHeaderBytes + len;
        continue;
      }
      // Resynchronize: the next offset holding a complete valid record.
      std::size_t next = pos + 1;
      std::uint32_t next_len = 0;
      while (next + kWalRecordHeaderBytes <= size && !ValidRecordAt(data, size, next, &next_len)) {
        ++next;
      }
      if (next + kWalRecordHeaderBytes > size) {
        stats->torn_tail_bytes += size - pos;
        Metrics().wal_torn_tails->Add();
        log->warn("WAL segment '{}': torn tail of {} bytes at offset {} ignored", path,
                  size - pos, pos);
        break;
      }
      stats->corrupt_records++;
      stats->skipped_bytes += next - pos;
      Metrics().wal_records_corrupt->Add();
      log->error("WAL segment '{}': corrupt region of {} bytes at offset {} skipped", path,
                 next - pos, pos);
      pos = next;
    }
  }
  ::munmap(map, size);
  return result;
}

}  // namespace ingot
