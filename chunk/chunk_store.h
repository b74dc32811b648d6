// ChunkStore: the RocksDB database holding the series index, the sealed chunks and the head
// checkpoints.
//
// Column families (see docs/chunk-format.md and DESIGN.md §4):
//   series        canonical series key                  -> big-endian series id, value type
//   series_by_id  big-endian series id                   -> value type, canonical key
//   chunks        big-endian sid ‖ big-endian flipped ts -> sealed chunk (RocksDB compression off)
//   meta          'h' ‖ big-endian sid                   -> checkpointed open buffer (chunk format)
//   late          big-endian sid ‖ flipped ts ‖ big-endian sequence -> late chunk (chunk format)
//
// Late chunks hold points that arrived after newer points of their series were sealed. They may
// overlap the series' chunks and each other; for the same timestamp the higher sequence wins, and
// any late chunk wins over the chunks family (see LateCompactor, which merges them back).
//
// The chunk key puts the first timestamp of the chunk after the series id with its sign bit
// flipped, so that byte order is (series, time) order for negative timestamps too.
//
// Compactions of the chunks family run a filter (made per compaction by a factory): with
// `retention_s` > 0 it drops chunks whose newest point is older than clock.NowNs() - retention at
// the start of that compaction, and with `compact_chunks` it rewrites float chunks with the
// compact (entropy-coded) value encoding where that is smaller.
//
// Thread safety: thread-safe (RocksDB is); Close() must not race with other calls.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rocksdb/db.h>

#include "chunk/series_key.h"
#include "config/clock.h"
#include "config/options.h"
#include "config/status.h"

namespace ingot {

inline constexpr std::size_t kChunkKeyBytes = 16;
inline constexpr std::size_t kHeadKeyBytes = 9;
inline constexpr char kHeadKeyPrefix = 'h';
inline constexpr std::size_t kLateKeyBytes = 24;

// Fixed-size encoded keys; the arrays are the key bytes.
struct ChunkKey {
  std::uint8_t bytes[kChunkKeyBytes];
  rocksdb::Slice slice() const {
    return rocksdb::Slice(reinterpret_cast<const char*>(bytes), kChunkKeyBytes);
  }
};
ChunkKey EncodeChunkKey(SeriesId sid, std::int64_t first_ts_ns) noexcept;
// False if `key` is not kChunkKeyBytes long.
bool DecodeChunkKey(rocksdb::Slice key, SeriesId* sid, std::int64_t* first_ts_ns) noexcept;

struct LateKey {
  std::uint8_t bytes[kLateKeyBytes];
  rocksdb::Slice slice() const {
    return rocksdb::Slice(reinterpret_cast<const char*>(bytes), kLateKeyBytes);
  }
};
LateKey EncodeLateKey(SeriesId sid, std::int64_t first_ts_ns, std::uint64_t seq) noexcept;
// False if `key` is not kLateKeyBytes long.
bool DecodeLateKey(rocksdb::Slice key, SeriesId* sid, std::int64_t* first_ts_ns,
                   std::uint64_t* seq) noexcept;

struct HeadKey {
  std::uint8_t bytes[kHeadKeyBytes];
  rocksdb::Slice slice() const {
    return rocksdb::Slice(reinterpret_cast<const char*>(bytes), kHeadKeyBytes);
  }
};
HeadKey EncodeHeadKey(SeriesId sid) noexcept;
bool DecodeHeadKey(rocksdb::Slice key, SeriesId* sid) noexcept;

void PutBigEndian64(std::uint64_t v, std::uint8_t* out) noexcept;
std::uint64_t GetBigEndian64(const std::uint8_t* in) noexcept;

class ChunkStore {
 public:
  // Opens (creating if missing) the database in `dir`. `clock` drives retention and must outlive
  // the store; the overload without it uses the system clock.
  static Status Open(const std::string& dir, const StorageOptions& options, const Clock& clock,
                     std::unique_ptr<ChunkStore>* store);
  static Status Open(const std::string& dir, const StorageOptions& options,
                     std::unique_ptr<ChunkStore>* store);
  // Opens an existing database without writing to it (the offline check); writes then fail.
  static Status OpenReadOnly(const std::string& dir, const StorageOptions& options,
                             std::unique_ptr<ChunkStore>* store);
  ~ChunkStore();

  ChunkStore(const ChunkStore&) = delete;
  ChunkStore& operator=(const ChunkStore&) = delete;

  // Flushes memtables and closes the database. Idempotent.
  Status Close();

  // Compacts the whole chunks and late families (runs the retention filter over every chunk and
  // drops replaced chunks from disk).
  Status CompactChunks();

  // Bytes of live SST files plus memtables of the chunks and late families (an estimate for
  // reports; replaced chunks count until a compaction drops them).
  std::uint64_t ChunkBytesOnDisk();

  rocksdb::DB* db() { return db_.get(); }
  // db()->Write, for every write of the node's own threads. In ThreadSanitizer builds writes take
  // one process-wide lock: Debian's RocksDB is not instrumented, so when one writer's batch is
  // copied into another's write group (RocksDB hands batches over with its own atomics), the
  // copy looks like a race on the batch; serialized writes never form such groups.
  rocksdb::Status Write(const rocksdb::WriteOptions& options, rocksdb::WriteBatch* batch);
  rocksdb::ColumnFamilyHandle* series_cf() { return handles_[kSeries]; }
  rocksdb::ColumnFamilyHandle* series_by_id_cf() { return handles_[kSeriesById]; }
  rocksdb::ColumnFamilyHandle* chunks_cf() { return handles_[kChunks]; }
  rocksdb::ColumnFamilyHandle* meta_cf() { return handles_[kMeta]; }
  rocksdb::ColumnFamilyHandle* late_cf() { return handles_[kLate]; }
  // An iterator over the checkpointed heads (the meta family's 'h' keys), at the first one.
  std::unique_ptr<rocksdb::Iterator> NewHeadIterator();

  // Sequence numbers of late chunks: strictly increasing over the life of the data directory
  // (Storage raises the floor past every stored one at open).
  std::uint64_t NextLateSeq() { return late_seq_.fetch_add(1, std::memory_order_relaxed); }
  void RaiseLateSeq(std::uint64_t at_least);

 private:
  enum Family { kDefault = 0, kSeries, kSeriesById, kChunks, kMeta, kLate, kFamilyCount };
  ChunkStore() = default;
  static Status OpenMode(const std::string& dir, const StorageOptions& options, const Clock& clock,
                         bool read_only, std::unique_ptr<ChunkStore>* store);

  std::unique_ptr<rocksdb::Env> env_;  // outlives db_: declared first, destroyed last
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::atomic<std::uint64_t> late_seq_{1};
  bool read_only_ = false;
};

// Converts a RocksDB status into ours, keeping the message.
Status FromRocks(const rocksdb::Status& s, const std::string& context);

}  // namespace ingot
