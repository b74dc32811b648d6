#include "chunk/chunk_store.h"

#include <cstring>
#include <mutex>

#include <rocksdb/compaction_filter.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>

#include "chunk/chunk_format.h"
#include "chunk/storage_metrics.h"

namespace ingot {

namespace {

constexpr std::uint64_t kSignBit = std::uint64_t{1} << 63;
// Block size of the series definition families: larger blocks give zstd more of the repetition
// between neighbouring series' keys.
constexpr std::size_t kSeriesBlockBytes = 16 << 10;

// What compactions of the chunks family do to each chunk: drop it when its newest point is older
// than the retention cutoff (fixed when the compaction starts), and rewrite a float chunk with the
// compact value encoding (codec::EncodeDoublesCompact: the entropy-coded candidates, too slow for
// the ingest path) when that is smaller. Every chunk is rewritten at most once, by the first
// compaction that sees it. One filter per compaction, used by one thread.
class ChunkFilter final : public rocksdb::CompactionFilter {
 public:
  ChunkFilter(bool retention, std::int64_t cutoff_ns, bool recode)
      : retention_(retention), cutoff_ns_(cutoff_ns), recode_(recode) {
    if (recode_) ws_ = std::make_unique<codec::Workspace>();
  }
  bool Filter(int /*level*/, const rocksdb::Slice& key, const rocksdb::Slice& value,
              std::string* new_value, bool* value_changed) const override {
    // A chunk too short to hold a header is kept: reads report it as corrupt, and compaction is
    // not the place to silently destroy evidence.
    if (value.size() < kChunkHeaderBytes) return false;
    if (retention_) {
      std::int64_t max_ts;
      std::memcpy(&max_ts, value.data() + kChunkMaxTsOffset, sizeof max_ts);
      if (max_ts < cutoff_ns_) return true;
    }
    if (!recode_) return false;
    // Consecutive keys are one series' chunks in time order: its encoding hint carries over.
    const SeriesId sid =
        key.size() >= 8 ? GetBigEndian64(reinterpret_cast<const std::uint8_t*>(key.data())) : 0;
    if (sid != hint_sid_) {
      hint_ = codec::SeriesHint{};
      hint_sid_ = sid;
    }
    const std::span<const std::uint8_t> chunk(reinterpret_cast<const std::uint8_t*>(value.data()),
                                              value.size());
    if (RecodeChunkCompact(chunk, hint_, *ws_, new_value)) {
      *value_changed = true;
      StorageMetrics& m = Metrics();
      m.chunks_recoded->Add();
      m.chunk_bytes_saved_by_recoding->Add(value.size() - new_value->size());
    }
    return false;
  }
  const char* Name() const override { return "ingot.ChunkFilter"; }

 private:
  const bool retention_;
  const std::int64_t cutoff_ns_;
  const bool recode_;
  std::unique_ptr<codec::Workspace> ws_;
  mutable codec::SeriesHint hint_;
  mutable SeriesId hint_sid_ = 0;
};

class ChunkFilterFactory final : public rocksdb::CompactionFilterFactory {
 public:
  ChunkFilterFactory(const Clock& clock, std::int64_t retention_s, bool recode)
      : clock_(clock), retention_ns_(retention_s * 1'000'000'000), recode_(recode) {}
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& /*context*/) override {
    return std::make_unique<ChunkFilter>(retention_ns_ > 0, clock_.NowNs() - retention_ns_,
                                         recode_);
  }
  const char* Name() const override { return "ingot.ChunkFilterFactory"; }

 private:
  const Clock& clock_;
  const std::int64_t retention_ns_;
  const bool recode_;
};

// A full disk or an exhausted descriptor table passes. RocksDB treats a plain I/O error while it
// flushes or creates its log as fatal (only reopening the database clears it), but recovers by
// itself from a retryable one: writes stop, a background retry flushes again, and writes resume
// once it succeeds (ShardEngine::Recover then resumes the shard). This file system marks the
// errors of those transient conditions retryable, at file creation and on every write.
bool IsTransient(const rocksdb::IOStatus& s) {
  if (s.ok()) return false;
  if (s.subcode() == rocksdb::Status::kNoSpace || s.subcode() == rocksdb::Status::kSpaceLimit) {
    return true;
  }
  const char* msg = s.getState();
  if (msg == nullptr) return false;
  return std::strstr(msg, "Too many open files") != nullptr ||
         std::strstr(msg, "No space left on device") != nullptr ||
         std::strstr(msg, "Disk quota exceeded") != nullptr;
}

// A retryable I/O error with the original message. A full disk loses its NoSpace subcode on
// purpose: RocksDB's own no-space handling needs an SstFileManager to recover, the retry does not.
rocksdb::IOStatus MarkTransient(rocksdb::IOStatus s) {
  if (!IsTransient(s)) return s;
  rocksdb::IOStatus retryable = rocksdb::IOStatus::IOError(s.ToString());
  retryable.SetRetryable(true);
  return retryable;
}

class TransientWritableFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  explicit TransientWritableFile(std::unique_ptr<rocksdb::FSWritableFile>&& file)
      : rocksdb::FSWritableFileOwnerWrapper(std::move(file)) {}
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->Append(data, options, dbg));
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->Append(data, options, info, dbg));
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, std::uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->PositionedAppend(data, offset, options, dbg));
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->Flush(options, dbg));
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->Sync(options, dbg));
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->Fsync(options, dbg));
  }
  rocksdb::IOStatus Close(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->Close(options, dbg));
  }
};

class TransientErrorsFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  explicit TransientErrorsFileSystem(const std::shared_ptr<rocksdb::FileSystem>& base)
      : rocksdb::FileSystemWrapper(base) {}
  const char* Name() const override { return "ingot.TransientErrorsFileSystem"; }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    return Wrap(target()->NewWritableFile(name, options, result, dbg), result);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override {
    return Wrap(target()->ReopenWritableFile(name, options, result, dbg), result);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override {
    return Wrap(target()->ReuseWritableFile(name, old_name, options, result, dbg), result);
  }
  rocksdb::IOStatus NewRandomAccessFile(const std::string& name,
                                        const rocksdb::FileOptions& options,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* result,
                                        rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->NewRandomAccessFile(name, options, result, dbg));
  }
  rocksdb::IOStatus NewSequentialFile(const std::string& name, const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSSequentialFile>* result,
                                      rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->NewSequentialFile(name, options, result, dbg));
  }
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& options,
                                 std::unique_ptr<rocksdb::FSDirectory>* result,
                                 rocksdb::IODebugContext* dbg) override {
    return MarkTransient(target()->NewDirectory(name, options, result, dbg));
  }

 private:
  static rocksdb::IOStatus Wrap(rocksdb::IOStatus s,
                                std::unique_ptr<rocksdb::FSWritableFile>* result) {
    if (!s.ok()) return MarkTransient(std::move(s));
    *result = std::make_unique<TransientWritableFile>(std::move(*result));
    return s;
  }
};

}  // namespace

void PutBigEndian64(std::uint64_t v, std::uint8_t* out) noexcept {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<std::uint8_t>(v);
    v >>= 8;
  }
}

std::uint64_t GetBigEndian64(const std::uint8_t* in) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | in[i];
  return v;
}

ChunkKey EncodeChunkKey(SeriesId sid, std::int64_t first_ts_ns) noexcept {
  ChunkKey k;
  PutBigEndian64(sid, k.bytes);
  PutBigEndian64(static_cast<std::uint64_t>(first_ts_ns) ^ kSignBit, k.bytes + 8);
  return k;
}

bool DecodeChunkKey(rocksdb::Slice key, SeriesId* sid, std::int64_t* first_ts_ns) noexcept {
  if (key.size() != kChunkKeyBytes) return false;
  const auto* p = reinterpret_cast<const std::uint8_t*>(key.data());
  *sid = GetBigEndian64(p);
  *first_ts_ns = static_cast<std::int64_t>(GetBigEndian64(p + 8) ^ kSignBit);
  return true;
}

LateKey EncodeLateKey(SeriesId sid, std::int64_t first_ts_ns, std::uint64_t seq) noexcept {
  LateKey k;
  PutBigEndian64(sid, k.bytes);
  PutBigEndian64(static_cast<std::uint64_t>(first_ts_ns) ^ kSignBit, k.bytes + 8);
  PutBigEndian64(seq, k.bytes + 16);
  return k;
}

bool DecodeLateKey(rocksdb::Slice key, SeriesId* sid, std::int64_t* first_ts_ns,
                   std::uint64_t* seq) noexcept {
  if (key.size() != kLateKeyBytes) return false;
  const auto* p = reinterpret_cast<const std::uint8_t*>(key.data());
  *sid = GetBigEndian64(p);
  *first_ts_ns = static_cast<std::int64_t>(GetBigEndian64(p + 8) ^ kSignBit);
  *seq = GetBigEndian64(p + 16);
  return true;
}

void ChunkStore::RaiseLateSeq(std::uint64_t at_least) {
  std::uint64_t cur = late_seq_.load(std::memory_order_relaxed);
  while (cur < at_least && !late_seq_.compare_exchange_weak(cur, at_least)) {
  }
}

HeadKey EncodeHeadKey(SeriesId sid) noexcept {
  HeadKey k;
  k.bytes[0] = static_cast<std::uint8_t>(kHeadKeyPrefix);
  PutBigEndian64(sid, k.bytes + 1);
  return k;
}

bool DecodeHeadKey(rocksdb::Slice key, SeriesId* sid) noexcept {
  if (key.size() != kHeadKeyBytes || key[0] != kHeadKeyPrefix) return false;
  *sid = GetBigEndian64(reinterpret_cast<const std::uint8_t*>(key.data()) + 1);
  return true;
}

Status FromRocks(const rocksdb::Status& s, const std::string& context) {
  if (s.ok()) return Status::OK();
  const std::string msg = context + ": " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsBusy() || s.IsTryAgain()) return Status::Busy(msg);
  return Status::IOError(msg);
}

Status ChunkStore::Open(const std::string& dir, const StorageOptions& options,
                        std::unique_ptr<ChunkStore>* store) {
  return Open(dir, options, SystemClock::Instance(), store);
}

Status ChunkStore::Open(const std::string& dir, const StorageOptions& options, const Clock& clock,
                        std::unique_ptr<ChunkStore>* store) {
  return OpenMode(dir, options, clock, /*read_only=*/false, store);
}

Status ChunkStore::OpenReadOnly(const std::string& dir, const StorageOptions& options,
                                std::unique_ptr<ChunkStore>* store) {
  return OpenMode(dir, options, SystemClock::Instance(), /*read_only=*/true, store);
}

Status ChunkStore::OpenMode(const std::string& dir, const StorageOptions& options,
                            const Clock& clock, bool read_only,
                            std::unique_ptr<ChunkStore>* store) {
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = !read_only;
  db_options.create_missing_column_families = !read_only;
  db_options.max_background_jobs = 2;
  db_options.keep_log_file_num = 5;
  db_options.max_open_files = options.max_open_files;
  rocksdb::Env* base_env =
      options.rocksdb_env != nullptr ? options.rocksdb_env : rocksdb::Env::Default();
  std::unique_ptr<ChunkStore> s(new ChunkStore());
  s->env_ = rocksdb::NewCompositeEnv(
      std::make_shared<TransientErrorsFileSystem>(base_env->GetFileSystem()));
  db_options.env = s->env_.get();

  rocksdb::ColumnFamilyOptions index_options;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  index_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));

  // Chunk payloads are already compressed by the codec; a second pass costs CPU and saves ~0.
  rocksdb::ColumnFamilyOptions chunk_options = index_options;
  // The small families (series definitions, checkpointed heads) are written in bursts and read
  // once at start: memtables of 8 MiB instead of 64 keep a million new series from parking
  // ~100 MB of RSS in memtables.
  index_options.write_buffer_size = 8 << 20;
  chunk_options.compression = rocksdb::kNoCompression;
  chunk_options.bottommost_compression = rocksdb::kNoCompression;
  if (options.retention_s > 0 || options.compact_chunks) {
    chunk_options.compaction_filter_factory = std::make_shared<ChunkFilterFactory>(
        clock, options.retention_s, options.compact_chunks);
  }

  // Series definitions are text that repeats from one series to the next (the same measurement,
  // tag keys and most tag values): zstd over 16 KiB blocks stores them in half what Snappy over
  // 4 KiB blocks does (TSBS-like tags: 36 to 17 bytes per series). They are read at start-up and
  // then from the block cache, so the slower decompression costs little.
  rocksdb::ColumnFamilyOptions series_options = index_options;
  series_options.compression = rocksdb::kZSTD;
  rocksdb::BlockBasedTableOptions series_table = table;
  series_table.block_size = kSeriesBlockBytes;
  series_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(series_table));
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, index_options},
      {"series", series_options},
      {"series_by_id", series_options},
      {"chunks", chunk_options},
      {"meta", index_options},
      {"late", chunk_options},
  };
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs =
      read_only ? rocksdb::DB::OpenForReadOnly(db_options, dir, families, &s->handles_, &raw)
                : rocksdb::DB::Open(db_options, dir, families, &s->handles_, &raw);
  if (!rs.ok()) return FromRocks(rs, "open RocksDB at '" + dir + "'");
  s->db_.reset(raw);
  s->read_only_ = read_only;
  *store = std::move(s);
  return Status::OK();
}

rocksdb::Status ChunkStore::Write(const rocksdb::WriteOptions& options,
                                  rocksdb::WriteBatch* batch) {
#if defined(INGOT_TSAN_BUILD)
  static std::mutex serialized;
  std::lock_guard<std::mutex> lock(serialized);
#endif
  return db_->Write(options, batch);
}

std::unique_ptr<rocksdb::Iterator> ChunkStore::NewHeadIterator() {
  // Static: the read options keep pointers to the bounds for the iterator's life.
  static const char kBounds[2] = {kHeadKeyPrefix, static_cast<char>(kHeadKeyPrefix + 1)};
  static const rocksdb::Slice kLower(kBounds, 1), kUpper(kBounds + 1, 1);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &kLower;
  ro.iterate_upper_bound = &kUpper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, meta_cf()));
  it->Seek(kLower);
  return it;
}

Status ChunkStore::CompactChunks() {
  rocksdb::CompactRangeOptions options;
  // Force the bottommost level through the filter too, so that every chunk is examined.
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  INGOT_RETURN_IF_ERROR(
      FromRocks(db_->CompactRange(options, chunks_cf(), nullptr, nullptr), "compact chunks"));
  return FromRocks(db_->CompactRange(options, late_cf(), nullptr, nullptr), "compact late chunks");
}

std::uint64_t ChunkStore::ChunkBytesOnDisk() {
  std::uint64_t total = 0;
  for (rocksdb::ColumnFamilyHandle* cf : {chunks_cf(), late_cf()}) {
    std::uint64_t sst = 0, mem = 0;
    db_->GetIntProperty(cf, rocksdb::DB::Properties::kTotalSstFilesSize, &sst);
    db_->GetIntProperty(cf, rocksdb::DB::Properties::kCurSizeAllMemTables, &mem);
    total += sst + mem;
  }
  return total;
}

Status ChunkStore::Close() {
  if (!db_) return Status::OK();
  rocksdb::Status rs;
  if (!read_only_) rs = db_->Flush(rocksdb::FlushOptions(), handles_);
  for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
  handles_.clear();
  rocksdb::Status cs = db_->Close();
  db_.reset();
  if (!rs.ok()) return FromRocks(rs, "flush RocksDB");
  return FromRocks(cs, "close RocksDB");
}

ChunkStore::~ChunkStore() { (void)Close(); }

}  // namespace ingot
