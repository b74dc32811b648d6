#include "chunk/shard_engine.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <span>

#include "chunk/chunk_format.h"
#include "chunk/storage_metrics.h"
#include "chunk/wal_format.h"
#include "config/logging.h"

namespace ingot {

namespace {

std::int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void EncodePoints(std::span<const PointRecord> batch, std::span<const std::uint8_t> definitions,
                  std::vector<std::uint8_t>* out) {
  const std::size_t header =
      definitions.empty() ? kWalPointsHeaderBytes : kWalBatchHeaderBytes + definitions.size();
  out->resize(header + batch.size() * kWalPointBytes);
  std::uint8_t* p = out->data();
  p[0] = definitions.empty() ? kWalPointsRecord : kWalBatchRecord;
  p[1] = p[2] = p[3] = 0;
  const auto count = static_cast<std::uint32_t>(batch.size());
  std::memcpy(p + 4, &count, 4);
  if (!definitions.empty()) {
    const auto def_bytes = static_cast<std::uint32_t>(definitions.size());
    std::memcpy(p + 8, &def_bytes, 4);
    std::memcpy(p + kWalBatchHeaderBytes, definitions.data(), definitions.size());
  }
  p += header;
  for (const PointRecord& r : batch) {
    std::memcpy(p, &r.sid, 8);
    std::memcpy(p + 8, &r.ts_ns, 8);
    std::memcpy(p + 16, &r.bits, 8);
    p[24] = static_cast<std::uint8_t>(r.type);
    p += kWalPointBytes;
  }
}

}  // namespace

ShardEngine::ShardEngine(int shard_id, int shard_count, const StorageOptions& options,
                         WalSyncPolicy policy, ChunkStore& store, SeriesIndex& index, LateSet& late,
                         const Clock& clock)
    : shard_id_(shard_id),
      shard_count_(shard_count),
      options_(options),
      policy_(policy),
      store_(store),
      index_(index),
      late_(late),
      clock_(clock),
      last_checkpoint_steady_ns_(SteadyNowNs()),
      seal_buffer_(MaxSealedChunkBytes(kChunkCapacity) + codec::kSavedHintBytes),
      ws_(std::make_unique<codec::Workspace>()) {}

ShardEngine::~ShardEngine() { (void)Close(); }

Status ShardEngine::StartWal(const std::string& dir, std::uint64_t first_seq) {
  MutexLock lock(write_mu_);
  return Wal::Open(dir, policy_, first_seq, &wal_);
}

Status ShardEngine::Append(std::span<const PointRecord> batch,
                           std::span<const std::uint8_t> definitions, AppendResult* result) {
  AppendResult local;
  if (result == nullptr) result = &local;
  *result = AppendResult{};
  if (batch.empty() && definitions.empty()) return Status::OK();
  MutexLock lock(write_mu_);
  if (!failed_.ok()) return failed_;
  if (closed_ || !wal_) return Status::IOError("shard " + std::to_string(shard_id_) + " closed");
  for (const PointRecord& p : batch) {
    // Reads look for a series' head in shard ShardOf(sid); a misrouted point would be invisible.
    const std::uint64_t owner = p.sid % static_cast<std::uint64_t>(shard_count_);
    if (owner != static_cast<std::uint64_t>(shard_id_)) {
      return Status::InvalidArgument("series " + std::to_string(p.sid) + " belongs to shard " +
                                     std::to_string(owner) + ", not " + std::to_string(shard_id_));
    }
  }
  EncodePoints(batch, definitions, &wal_payload_);
  INGOT_RETURN_IF_ERROR(wal_->Append(wal_payload_));
  INGOT_RETURN_IF_ERROR(Apply(batch, result));
  if (wal_->bytes_since_roll() >= options_.wal_max_bytes) {
    // The batch is durable and applied whatever happens here; a failed checkpoint only keeps the
    // WAL longer (and a RocksDB failure stops later writes).
    Status st = CheckpointLocked();
    if (!st.ok()) Logger("storage")->error("shard {}: checkpoint: {}", shard_id_, st.ToString());
  }
  return Status::OK();
}

Status ShardEngine::Replay(std::span<const PointRecord> batch, AppendResult* result) {
  MutexLock lock(write_mu_);
  return Apply(batch, result);
}

bool ShardEngine::HeadHint(SeriesId sid, codec::SeriesHint* hint) const {
  WriterLock lock(heads_mu_);
  const Slot* slot = FindLocked(sid);
  if (slot == nullptr) return false;
  *hint = slot->head.hint();
  return true;
}

void ShardEngine::RestoreHint(SeriesId sid, const codec::SeriesHint& hint) {
  WriterLock lock(heads_mu_);
  if (Slot* slot = FindLocked(sid); slot != nullptr) slot->head.hint() = hint;
}

ShardEngine::Slot* ShardEngine::FindLocked(SeriesId sid) const {
  const std::size_t local = sid / static_cast<std::uint64_t>(shard_count_);
  const std::size_t page = local / kSlotsPerPage;
  if (page >= heads_.size() || !heads_[page]) return nullptr;
  Slot* slot = &heads_[page][local % kSlotsPerPage];
  return slot->live ? slot : nullptr;
}

template <typename Fn>
void ShardEngine::ForEachLiveLocked(Fn&& fn) {
  for (std::size_t page = 0; page < heads_.size(); ++page) {
    if (!heads_[page]) continue;
    for (std::size_t i = 0; i < kSlotsPerPage; ++i) {
      Slot& slot = heads_[page][i];
      if (!slot.live) continue;
      const SeriesId sid = (page * kSlotsPerPage + i) * static_cast<std::uint64_t>(shard_count_) +
                           static_cast<std::uint64_t>(shard_id_);
      fn(sid, slot);
    }
  }
}

ShardEngine::Slot* ShardEngine::FindOrCreateLocked(SeriesId sid, ValueType type) {
  const std::size_t local = sid / static_cast<std::uint64_t>(shard_count_);
  const std::size_t page = local / kSlotsPerPage;
  if (page >= heads_.size()) heads_.resize(page + 1);
  if (!heads_[page]) heads_[page] = std::make_unique<Slot[]>(kSlotsPerPage);
  Slot* slot = &heads_[page][local % kSlotsPerPage];
  if (slot->live) return slot;
  // First point of this series since start: chunks already sealed bound what may still be
  // accepted. One seek per series per process lifetime, none for a series created since start.
  std::int64_t newest_sealed = HeadBuffer::kNoSealedTs;
  if (sid >= index_.first_new_sid()) {
    *slot = Slot{HeadBuffer(type, newest_sealed), true, false};
    ++live_heads_;
    return slot;
  }
  const ChunkKey lower = EncodeChunkKey(sid, std::numeric_limits<std::int64_t>::min());
  const rocksdb::Slice lower_slice = lower.slice();
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower_slice;
  std::unique_ptr<rocksdb::Iterator> iter(store_.db()->NewIterator(ro, store_.chunks_cf()));
  iter->SeekForPrev(EncodeChunkKey(sid, std::numeric_limits<std::int64_t>::max()).slice());
  SeriesId key_sid;
  std::int64_t first_ts;
  if (iter->Valid() && DecodeChunkKey(iter->key(), &key_sid, &first_ts) && key_sid == sid) {
    ChunkHeader h;
    const rocksdb::Slice v = iter->value();
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(v.data()),
                                              v.size());
    newest_sealed = ParseChunkHeader(bytes, &h).ok() ? h.max_ts_ns : first_ts;
  }
  *slot = Slot{HeadBuffer(type, newest_sealed), true, false};
  ++live_heads_;
  return slot;
}

std::size_t ShardEngine::EncodeOldestLocked(HeadBuffer& buffer, std::size_t n,
                                            std::int64_t cutoff_ns, ChunkHeader* h,
                                            std::size_t* live_points) {
  const auto ts = buffer.ts().first(n);
  const auto values = buffer.values_bits().first(n);
  // Points that expired while they waited are dropped here rather than sealed into a chunk that
  // the next compaction would delete.
  const auto expired =
      static_cast<std::size_t>(std::lower_bound(ts.begin(), ts.end(), cutoff_ns) - ts.begin());
  if (expired > 0) Metrics().points_dropped_retention->Add(expired);
  *live_points = n - expired;
  if (expired == n) return 0;
  return SealChunk(buffer.type(), ts.subspan(expired), values.subspan(expired), buffer.hint(), *ws_,
                   seal_buffer_, h);
}

void ShardEngine::ThawLocked(SeriesId sid, HeadBuffer& head) {
  const Status st = head.Thaw(*ws_);
  if (st.ok()) return;
  // Only a damaged process gets here: the segments were encoded by this process a moment ago.
  // Their points are still in the WAL until the next checkpoint; the head goes on without them.
  Metrics().chunks_corrupt->Add();
  Logger("storage")->error("series {}: head buffer dropped, its frozen points do not decode: {}",
                           sid, st.ToString());
  head = HeadBuffer(head.type(), head.sealed_any() ? head.newest_sealed_ts_ns()
                                                   : HeadBuffer::kNoSealedTs);
}

void ShardEngine::SealLocked(SeriesId sid, HeadBuffer& head, std::int64_t cutoff_ns,
                             AppendResult* result) {
  ThawLocked(sid, head);
  const std::size_t n = std::min(head.size(), kChunkCapacity);
  StorageMetrics& m = Metrics();
  ChunkHeader h;
  std::size_t live = 0;
  const std::size_t bytes = EncodeOldestLocked(head, n, cutoff_ns, &h, &live);
  if (bytes > 0) {
    seal_batch_.Put(store_.chunks_cf(), EncodeChunkKey(sid, h.min_ts_ns).slice(),
                    rocksdb::Slice(reinterpret_cast<const char*>(seal_buffer_.data()), bytes));
    result->chunks_sealed++;
    if (head.type() == ValueType::kFloat && h.value_encoding < codec::kFloatEncodingCount) {
      m.chunks_sealed_float[h.value_encoding]->Add();
    } else {
      m.chunks_sealed_int->Add();
    }
    m.values_sealed->Add(live);
    m.chunk_bytes_written->Add(bytes);
  }
  head.DropFront(n, /*sealed=*/true);
  head.TrimTail();
}

std::int64_t ShardEngine::RetentionCutoffNs() const {
  return options_.retention_s > 0 ? clock_.NowNs() - options_.retention_s * 1'000'000'000
                                  : std::numeric_limits<std::int64_t>::min();
}

Status ShardEngine::Apply(std::span<const PointRecord> batch, AppendResult* result) {
  AppendResult local;
  if (result == nullptr) result = &local;
  const std::int64_t cutoff_ns = RetentionCutoffNs();
  const std::int64_t late_cutoff_ns =
      options_.late_max_age_s > 0
          ? std::max(cutoff_ns, clock_.NowNs() - options_.late_max_age_s * 1'000'000'000)
          : cutoff_ns;
  WriterLock lock(heads_mu_);
  seal_batch_.Clear();
  late_seals_pending_ = 0;
  for (const PointRecord& p : batch) {
    if (p.ts_ns < cutoff_ns) {
      result->rejected_expired++;
      continue;
    }
    Slot* slot = FindOrCreateLocked(p.sid, p.type);
    HeadBuffer& head = slot->head;
    if (head.type() != p.type) {
      result->rejected_type++;
      continue;
    }
    HeadBuffer::InsertResult inserted = head.Insert(p.ts_ns, p.bits);
    if (inserted == HeadBuffer::InsertResult::kFrozenRange) {
      ThawLocked(p.sid, head);
      inserted = head.Insert(p.ts_ns, p.bits);
    }
    if (inserted == HeadBuffer::InsertResult::kTooOld) {
      if (p.ts_ns < late_cutoff_ns) {
        result->rejected_too_old++;
        continue;
      }
      InsertLateLocked(p, cutoff_ns);
      result->late++;
      result->accepted++;
      continue;
    }
    result->accepted++;
    slot->dirty = true;
    if (head.overfull()) {
      SealLocked(p.sid, head, cutoff_ns, result);
    } else if (head.tail_full()) {
      head.Freeze(*ws_, seal_buffer_);
    }
  }
  StorageMetrics& m = Metrics();
  m.points_accepted->Add(result->accepted);
  if (result->late) m.points_late->Add(result->late);
  if (result->rejected_too_old) m.points_rejected_too_old->Add(result->rejected_too_old);
  if (result->rejected_expired) m.points_rejected_expired->Add(result->rejected_expired);
  if (result->rejected_type) m.points_rejected_type->Add(result->rejected_type);
  if (seal_batch_.Count() > 0) {
    // Not synced: the points are in our WAL, and the next checkpoint's synced write makes every
    // earlier RocksDB write durable before any WAL segment is deleted.
    rocksdb::Status rs = store_.Write(rocksdb::WriteOptions(), &seal_batch_);
    if (!rs.ok()) {
      // The sealed chunks left their heads: keep them for Recover().
      std::swap(unwritten_, seal_batch_);
      unwritten_late_seals_ = late_seals_pending_;
      seal_batch_.Clear();
      failed_ = FromRocks(rs, "shard " + std::to_string(shard_id_) + ": write sealed chunks");
      m.write_errors->Add();
      Logger("storage")->error(
          "{}; shard refuses writes until the chunks are written (retried every second), WAL "
          "kept for replay",
          failed_.ToString());
      return failed_;
    }
    seal_batch_.Clear();
    // Only now are the late chunks readable: the compactor must not see the count move first.
    late_seals_.fetch_add(late_seals_pending_, std::memory_order_acq_rel);
    chunk_writes_.fetch_add(1, std::memory_order_acq_rel);
  }
  return Status::OK();
}

void ShardEngine::InsertLateLocked(const PointRecord& p, std::int64_t cutoff_ns) {
  auto [it, created] = late_heads_.try_emplace(p.sid, p.type, HeadBuffer::kNoSealedTs);
  // Set before the point is readable; readers test the bit, then read the buffer.
  if (created) late_.Set(p.sid);
  HeadBuffer& late = it->second;
  const std::size_t before = late.size();
  late.Insert(p.ts_ns, p.bits);
  late_points_ += late.size() - before;
  if (late.overfull()) SealLateLocked(p.sid, late, kChunkCapacity, cutoff_ns, seal_batch_);
}

void ShardEngine::SealLateLocked(SeriesId sid, HeadBuffer& late, std::size_t n,
                                 std::int64_t cutoff_ns, rocksdb::WriteBatch& batch) {
  n = std::min(n, late.size());
  ChunkHeader h;
  std::size_t live = 0;
  const std::size_t bytes = EncodeOldestLocked(late, n, cutoff_ns, &h, &live);
  if (bytes > 0) {
    StorageMetrics& m = Metrics();
    batch.Put(store_.late_cf(), EncodeLateKey(sid, h.min_ts_ns, store_.NextLateSeq()).slice(),
              rocksdb::Slice(reinterpret_cast<const char*>(seal_buffer_.data()), bytes));
    ++late_seals_pending_;
    m.late_chunks_written->Add();
    m.late_chunk_bytes_written->Add(bytes);
  }
  late_points_ -= n;
  late.DropFront(n, /*sealed=*/false);
}

Status ShardEngine::FlushLateLocked() {
  if (late_heads_.empty()) return Status::OK();
  const std::int64_t cutoff_ns = RetentionCutoffNs();
  rocksdb::WriteBatch batch;
  late_seals_pending_ = 0;
  for (auto& [sid, late] : late_heads_) {
    while (!late.empty()) SealLateLocked(sid, late, kChunkCapacity, cutoff_ns, batch);
  }
  if (batch.Count() > 0) {
    // Not synced: the WAL still holds these points; a checkpoint's synced write follows.
    rocksdb::Status rs = store_.Write(rocksdb::WriteOptions(), &batch);
    if (!rs.ok()) {
      std::swap(unwritten_, batch);
      unwritten_late_seals_ = late_seals_pending_;
      late_seals_pending_ = 0;
      late_heads_.clear();
      late_points_ = 0;
      failed_ = FromRocks(rs, "shard " + std::to_string(shard_id_) + ": write late chunks");
      Metrics().write_errors->Add();
      Logger("storage")->error("{}; shard refuses writes until the chunks are written",
                               failed_.ToString());
      return failed_;
    }
    late_seals_.fetch_add(late_seals_pending_, std::memory_order_acq_rel);
  }
  late_seals_pending_ = 0;
  late_heads_.clear();
  late_points_ = 0;
  return Status::OK();
}

Status ShardEngine::FlushLateIfOver(std::size_t max_points) {
  MutexLock wlock(write_mu_);
  if (closed_ || !failed_.ok()) return Status::OK();
  WriterLock lock(heads_mu_);
  if (late_points_ <= max_points) return Status::OK();
  return FlushLateLocked();
}

void ShardEngine::ReadLateHead(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                               std::vector<LatePoint>* out, ValueType* type) const {
  WriterLock lock(heads_mu_);
  const auto it = late_heads_.find(sid);
  if (it == late_heads_.end()) return;
  const HeadBuffer& late = it->second;
  *type = late.type();
  const auto ts = late.ts();
  const auto bits = late.values_bits();
  const auto first = std::lower_bound(ts.begin(), ts.end(), start_ns);
  for (auto i = static_cast<std::size_t>(first - ts.begin()); i < ts.size() && ts[i] <= end_ns;
       ++i) {
    out->push_back({ts[i], kLateHeadRank, bits[i]});
  }
}

bool ShardEngine::ClearLateIfQuiet(SeriesId sid, std::uint64_t seals_before) {
  WriterLock lock(heads_mu_);
  if (late_seals_.load(std::memory_order_acquire) != seals_before) return false;
  if (late_heads_.contains(sid)) return false;
  late_.Clear(sid);
  return true;
}

std::size_t ShardEngine::late_points() const {
  WriterLock lock(heads_mu_);
  return late_points_;
}

Status ShardEngine::ReadHead(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                             std::vector<std::int64_t>* ts, std::vector<double>* values,
                             std::int64_t* head_first_ts_ns) const {
  ts->clear();
  values->clear();
  return AppendHead(sid, start_ns, end_ns, ts, values, head_first_ts_ns);
}

Status ShardEngine::AppendHead(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                               std::vector<std::int64_t>* ts, std::vector<double>* values,
                               std::int64_t* head_first_ts_ns) const {
  // The reading thread's own scratch for frozen segments (the shard's is the writers'), made on
  // its first head read: threads that never read heads do not carry its 80 KiB.
  thread_local std::unique_ptr<codec::Workspace> read_ws;
  if (read_ws == nullptr) read_ws = std::make_unique<codec::Workspace>();
  ReaderLock lock(heads_mu_);
  const Slot* slot = FindLocked(sid);
  if (slot == nullptr || slot->head.empty()) {
    if (head_first_ts_ns != nullptr) *head_first_ts_ns = std::numeric_limits<std::int64_t>::max();
    return Status::OK();
  }
  const HeadBuffer& head = slot->head;
  if (head_first_ts_ns != nullptr) *head_first_ts_ns = head.first_ts();
  if (start_ns > end_ns) return Status::OK();
  return head.ReadRange(start_ns, end_ns, *read_ws, ts, values);
}

Status ShardEngine::PersistHeads() {
  MutexLock lock(write_mu_);
  return PersistHeadsLocked();
}

std::size_t ShardEngine::EncodeHeadLocked(SeriesId sid, HeadBuffer& head, SealFor purpose,
                                          Status* st) {
  // A copy of the hint: a partial buffer should not steer the next real chunk's encoding.
  // The series' own hint is saved after the chunk, for the next chunk after a restart.
  codec::SeriesHint hint = head.hint();
  std::span<const std::int64_t> ts = head.ts();
  std::span<const std::uint64_t> bits = head.values_bits();
  if (head.frozen()) {
    const std::size_t n = head.size();
    persist_ts_.resize(n);
    persist_bits_.resize(n);
    const Status materialized = head.Materialize(*ws_, persist_ts_, persist_bits_);
    if (!materialized.ok()) {
      *st = materialized.WithContext("series " + std::to_string(sid));
      return 0;
    }
    ts = persist_ts_;
    bits = persist_bits_;
  }
  const std::size_t chunk_bytes =
      SealChunk(head.type(), ts, bits, hint, *ws_, seal_buffer_, nullptr, purpose);
  return AppendHeadHint(head.hint(), chunk_bytes, seal_buffer_);
}

Status ShardEngine::PersistHeadsLocked(std::size_t compact_budget, std::size_t* compacted) {
  // The WAL segments about to be deleted may hold definitions of series that are not yet in the
  // index's column family.
  INGOT_RETURN_IF_ERROR(index_.FlushDefinitions(/*sync=*/true));
  rocksdb::WriteBatch batch;
  std::size_t rewritten = 0;
  // Slots whose compact checkpoint is in `batch`: marked once it is written.
  std::vector<Slot*> made_compact;
  {
    WriterLock lock(heads_mu_);
    // Late buffers become late chunks; the synced write below makes them durable with the heads.
    INGOT_RETURN_IF_ERROR(FlushLateLocked());
    Status failed;  // a frozen segment that did not decode (memory corruption)
    ForEachLiveLocked([&](SeriesId sid, Slot& slot) {
      heads_mu_.AssertHeld();  // held around the loop (the analysis does not
                               // enter lambdas)
      HeadBuffer& head = slot.head;
      const bool idle = !slot.dirty && !head.empty() && !slot.compact;
      if (!slot.dirty && !(idle && rewritten < compact_budget)) {
        head.ReleaseMemoryIfEmpty();
        return;
      }
      const HeadKey key = EncodeHeadKey(sid);
      if (head.empty()) {
        batch.Delete(store_.meta_cf(), key.slice());
      } else {
        const std::size_t bytes =
            EncodeHeadLocked(sid, head, idle ? SealFor::kCompact : SealFor::kHead, &failed);
        if (bytes == 0) return;
        batch.Put(store_.meta_cf(), key.slice(),
                  rocksdb::Slice(reinterpret_cast<const char*>(seal_buffer_.data()), bytes));
      }
      if (idle) {
        ++rewritten;
        made_compact.push_back(&slot);
      }
      slot.dirty = false;
      slot.compact = false;
    });
    if (!failed.ok()) return failed;
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  rocksdb::Status rs = store_.Write(wo, &batch);
  if (!rs.ok()) {
    // The heads are still in memory: mark them for the next checkpoint, which Recover() runs.
    {
      WriterLock lock(heads_mu_);
      ForEachLiveLocked([](SeriesId, Slot& slot) { slot.dirty = true; });
    }
    failed_ = FromRocks(rs, "shard " + std::to_string(shard_id_) + ": checkpoint heads");
    Metrics().write_errors->Add();
    Logger("storage")->error("{}; shard refuses writes until a checkpoint succeeds",
                             failed_.ToString());
    return failed_;
  }
  {
    // Slots live in pages that never move, and write_mu_ (held) keeps points from arriving: a
    // slot in the list is still unchanged since its compact encoding.
    WriterLock lock(heads_mu_);
    for (Slot* slot : made_compact) slot->compact = !slot->dirty;
  }
  if (compacted != nullptr) *compacted = rewritten;
  return Status::OK();
}

Status ShardEngine::CompactHeads(std::size_t* heads) {
  MutexLock lock(write_mu_);
  INGOT_RETURN_IF_ERROR(PersistHeadsLocked(0));
  return PersistHeadsLocked(SIZE_MAX, heads);
}

bool ShardEngine::failed() const {
  MutexLock lock(write_mu_);
  return !failed_.ok();
}

Status ShardEngine::Recover() {
  MutexLock lock(write_mu_);
  if (failed_.ok() || closed_) return Status::OK();
  // A failed write puts RocksDB itself in a read-only state until its error is cleared.
  rocksdb::Status rs = store_.db()->Resume();
  if (rs.ok() && unwritten_.Count() > 0) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rs = store_.Write(wo, &unwritten_);
  }
  if (!rs.ok()) return FromRocks(rs, "shard " + std::to_string(shard_id_) + ": recover");
  unwritten_.Clear();
  late_seals_.fetch_add(unwritten_late_seals_, std::memory_order_acq_rel);
  chunk_writes_.fetch_add(1, std::memory_order_acq_rel);
  unwritten_late_seals_ = 0;
  const Status was = failed_;
  failed_ = Status::OK();
  // A checkpoint makes sure that everything the WAL holds is stored before it is trimmed.
  Status st = CheckpointLocked();
  if (!st.ok()) return st;
  Logger("storage")->warn("shard {} recovered from: {}; writes accepted again", shard_id_,
                          was.ToString());
  return Status::OK();
}

Status ShardEngine::CheckpointLocked() {
  if (!failed_.ok()) return failed_;
  if (!wal_) return Status::IOError("shard " + std::to_string(shard_id_) + ": WAL not open");
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t covered_seq = 0;
  INGOT_RETURN_IF_ERROR(wal_->Roll(&covered_seq));
  INGOT_RETURN_IF_ERROR(PersistHeadsLocked());
  INGOT_RETURN_IF_ERROR(wal_->DeleteSegmentsUpTo(covered_seq));
  last_checkpoint_steady_ns_ = SteadyNowNs();
  Metrics().checkpoints->Add();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  Metrics().checkpoint_seconds->Observe(took.count());
  return Status::OK();
}

Status ShardEngine::Checkpoint() {
  MutexLock lock(write_mu_);
  if (closed_) return Status::OK();
  return CheckpointLocked();
}

Status ShardEngine::CheckpointIfDue() {
  MutexLock lock(write_mu_);
  if (closed_ || !wal_ || !failed_.ok() || wal_->bytes_since_roll() == 0) return Status::OK();
  const std::int64_t age_ns = SteadyNowNs() - last_checkpoint_steady_ns_;
  if (wal_->bytes_since_roll() >= options_.wal_max_bytes ||
      age_ns >= std::int64_t{options_.checkpoint_interval_ms} * 1'000'000) {
    return CheckpointLocked();
  }
  return Status::OK();
}

Status ShardEngine::SyncWal() {
  // The WAL's own mutex orders this against the writer; no write lock so that a slow fsync does
  // not stall the writer.
  Wal* wal;
  {
    MutexLock lock(write_mu_);
    if (closed_ || !wal_) return Status::OK();
    wal = wal_.get();
  }
  return wal->SyncIfDirty();
}

Status ShardEngine::Close() {
  MutexLock lock(write_mu_);
  if (closed_) return Status::OK();
  closed_ = true;
  if (!wal_) return Status::OK();
  Status st = failed_;
  if (st.ok()) st = PersistHeadsLocked();
  Status close_st = wal_->Close();
  if (st.ok() && close_st.ok()) {
    // Everything the WAL holds is now in RocksDB (synced): restart needs no replay.
    st = wal_->DeleteSegmentsUpTo(wal_->current_seq());
  }
  return st.ok() ? close_st : st;
}

std::size_t ShardEngine::head_series() const {
  WriterLock lock(heads_mu_);
  return live_heads_;
}

std::size_t ShardEngine::head_points() const {
  WriterLock lock(heads_mu_);
  std::size_t n = 0;
  const_cast<ShardEngine*>(this)->ForEachLiveLocked(
      [&](SeriesId, const Slot& slot) { n += slot.head.size(); });
  return n;
}

}  // namespace ingot
