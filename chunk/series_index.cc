#include "chunk/series_index.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <rocksdb/write_batch.h>
#include <xxhash.h>

#include "chunk/wal_format.h"
#include "config/logging.h"
#include "config/metrics.h"

namespace ingot {

namespace {

constexpr std::uint32_t kMetricNameName = 0;

Gauge& SeriesGauge() {
  static Gauge& g =
      MetricsRegistry::Default().AddGauge("ingot_series", "Series known to the index.");
  return g;
}

Counter& RejectedCounter(SeriesRejection r) {
  static Counter* counters[kSeriesRejectionCount] = {};
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 1; i < kSeriesRejectionCount; ++i) {
      counters[i] = &MetricsRegistry::Default().AddCounter(
          "ingot_series_rejected_total", "New series refused, by the limit or rule that refused them.",
          std::string("reason=\"") + SeriesRejectionName(static_cast<SeriesRejection>(i)) + "\"");
    }
  });
  return *counters[static_cast<int>(r)];
}

std::uint64_t HashKey(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }

std::uint64_t HashPair(std::uint32_t name, std::string_view value) {
  return XXH3_64bits_withSeed(value.data(), value.size(), name + 1);
}

std::int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Postings in the public id type.
std::vector<SeriesId> Widen(std::span<const std::uint32_t> ids) {
  return std::vector<SeriesId>(ids.begin(), ids.end());
}

}  // namespace

const char* SeriesRejectionName(SeriesRejection r) noexcept {
  switch (r) {
    case SeriesRejection::kNone: return "none";
    case SeriesRejection::kInvalidKey: return "invalid_key";
    case SeriesRejection::kMaxSeries: return "max_series";
    case SeriesRejection::kRate: return "rate";
    case SeriesRejection::kLabelCount: return "label_count";
    case SeriesRejection::kLabelBytes: return "label_bytes";
    case SeriesRejection::kKeyBytes: return "key_bytes";
  }
  return "?";
}

SeriesIndex::SeriesIndex(ChunkStore& store, const LimitsOptions& limits)
    : store_(store),
      limits_(limits),
      record_pages_(new std::atomic<Record*>[kRecordPages]) {
  for (std::size_t i = 0; i < kRecordPages; ++i) record_pages_[i].store(nullptr);
  names_.push_back(LabelName{kMetricName, {}, 0});
  pairs_.emplace_back();
  rate_tokens_ = limits_.max_new_series_per_minute;
  rate_refilled_ns_ = SteadyNowNs();
}

SeriesIndex::~SeriesIndex() {
  for (std::size_t i = 0; i < kRecordPages; ++i) delete[] record_pages_[i].load();
}

Status SeriesIndex::Load(ChunkStore& store, const LimitsOptions& limits,
                         std::unique_ptr<SeriesIndex>* index) {
  std::unique_ptr<SeriesIndex> idx(new SeriesIndex(store, limits));
  std::unique_ptr<rocksdb::Iterator> it(
      store.db()->NewIterator(rocksdb::ReadOptions(), store.series_by_id_cf()));
  MutexLock create(idx->create_mu_);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key();
    const rocksdb::Slice v = it->value();
    if (k.size() != 8 || v.size() < 1 || static_cast<std::uint8_t>(v[0]) >= kValueTypeCount) {
      return Status::Corruption("series_by_id: malformed entry (key " +
                                std::to_string(k.size()) + " bytes, value " +
                                std::to_string(v.size()) + " bytes)");
    }
    const SeriesId sid = GetBigEndian64(reinterpret_cast<const std::uint8_t*>(k.data()));
    if (sid == kInvalidSeriesId || sid >= kRecordPages * kRecordsPerPage) {
      return Status::Corruption("series_by_id: series id " + std::to_string(sid) +
                                " out of range");
    }
    INGOT_RETURN_IF_ERROR(idx->AddExistingLocked(sid, static_cast<ValueType>(v[0]),
                                                 std::string_view(v.data() + 1, v.size() - 1),
                                                 "series_by_id"));
  }
  INGOT_RETURN_IF_ERROR(FromRocks(it->status(), "load series index"));
  idx->pending_.clear();  // loaded definitions are durable already
  idx->first_new_sid_ = idx->next_sid_;
  idx->durable_below_.store(idx->next_sid_);
  SeriesGauge().Set(static_cast<std::int64_t>(idx->size()));
  *index = std::move(idx);
  return Status::OK();
}

const SeriesIndex::Record* SeriesIndex::RecordOf(SeriesId sid) const {
  if (sid == kInvalidSeriesId || sid > published_.load(std::memory_order_acquire)) return nullptr;
  const Record* page = record_pages_[sid / kRecordsPerPage].load(std::memory_order_acquire);
  if (page == nullptr) return nullptr;
  const Record* r = &page[sid % kRecordsPerPage];
  return r->key == nullptr ? nullptr : r;
}

SeriesIndex::Record* SeriesIndex::MutableRecord(SeriesId sid) {
  std::atomic<Record*>& slot = record_pages_[sid / kRecordsPerPage];
  Record* page = slot.load(std::memory_order_relaxed);
  if (page == nullptr) {
    page = new Record[kRecordsPerPage];
    slot.store(page, std::memory_order_release);
  }
  return &page[sid % kRecordsPerPage];
}

SeriesId SeriesIndex::FindLocked(const Stripe& stripe, std::uint64_t hash,
                                 std::string_view key) const {
  return stripe.table.Find(hash, [&](std::uint32_t id) {
    const Record* r = &record_pages_[id / kRecordsPerPage].load(
        std::memory_order_relaxed)[id % kRecordsPerPage];
    return std::string_view(r->key, r->key_len) == key;
  });
}

SeriesId SeriesIndex::Find(std::string_view key, ValueType* type) const {
  const std::uint64_t hash = HashKey(key);
  const Stripe& stripe = stripes_[hash >> 60];
  ReaderLock lock(stripe.mu);
  const SeriesId sid = FindLocked(stripe, hash, key);
  if (sid != kInvalidSeriesId && type != nullptr) {
    *type = record_pages_[sid / kRecordsPerPage].load()[sid % kRecordsPerPage].type;
  }
  return sid;
}

bool SeriesIndex::AllowNewSeriesLocked() {
  if (limits_.max_new_series_per_minute == 0) return true;
  const std::int64_t now = SteadyNowNs();
  const double per_ns = limits_.max_new_series_per_minute / 60e9;
  rate_tokens_ = std::min<double>(limits_.max_new_series_per_minute,
                                  rate_tokens_ + static_cast<double>(now - rate_refilled_ns_) * per_ns);
  rate_refilled_ns_ = now;
  if (rate_tokens_ < 1) return false;
  rate_tokens_ -= 1;
  return true;
}

Status SeriesIndex::Resolve(std::string_view key, ValueType type, ResolvedSeries* out) {
  *out = ResolvedSeries{};
  const std::uint64_t hash = HashKey(key);
  Stripe& stripe = stripes_[hash >> 60];
  {
    ReaderLock lock(stripe.mu);
    const SeriesId sid = FindLocked(stripe, hash, key);
    if (sid != kInvalidSeriesId) {
      out->sid = sid;
      out->type = record_pages_[sid / kRecordsPerPage].load()[sid % kRecordsPerPage].type;
      out->definition_pending = sid >= durable_below_.load(std::memory_order_acquire);
      return Status::OK();
    }
  }
  MutexLock create(create_mu_);
  {
    // Another creator may have won the race; only creators change the tables, and they are
    // serialized by create_mu_, so this answer holds until we publish.
    ReaderLock lock(stripe.mu);
    const SeriesId sid = FindLocked(stripe, hash, key);
    if (sid != kInvalidSeriesId) {
      out->sid = sid;
      out->type = record_pages_[sid / kRecordsPerPage].load()[sid % kRecordsPerPage].type;
      out->definition_pending = sid >= durable_below_.load(std::memory_order_acquire);
      return Status::OK();
    }
  }
  const SeriesId sid = next_sid_;
  INGOT_RETURN_IF_ERROR(CreateLocked(key, hash, type, sid, /*check_limits=*/true, &out->rejection));
  out->sid = sid;
  out->type = type;
  out->created = true;
  out->definition_pending = true;
  return Status::OK();
}

Status SeriesIndex::Resolve(std::string_view key, ValueType type, SeriesId* sid,
                            ValueType* stored_type) {
  ResolvedSeries r;
  Status st = Resolve(key, type, &r);
  *sid = r.sid;
  *stored_type = r.type;
  return st;
}

Status SeriesIndex::ResolveMany(std::span<const std::string_view> keys,
                                std::span<const ValueType> types, std::span<SeriesId> sids,
                                std::span<ValueType> stored_types) {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    INGOT_RETURN_IF_ERROR(Resolve(keys[i], types[i], &sids[i], &stored_types[i]));
  }
  return Status::OK();
}

Status SeriesIndex::CreateLocked(std::string_view key, std::uint64_t hash, ValueType type,
                                 SeriesId sid, bool check_limits, SeriesRejection* rejection,
                                 bool findable) {
  *rejection = SeriesRejection::kNone;
  auto refuse = [&](SeriesRejection why, Status st) {
    *rejection = why;
    if (check_limits) RejectedCounter(why).Add();
    return st;
  };
  if (check_limits && key.size() > limits_.max_series_key_bytes) {
    return refuse(SeriesRejection::kKeyBytes,
                  Status::InvalidArgument("series key of " + std::to_string(key.size()) +
                                          " bytes exceeds limits.max_series_key_bytes = " +
                                          std::to_string(limits_.max_series_key_bytes)));
  }
  SeriesKeyParts parts;
  Status parsed = ParseSeriesKey(key, &parts);
  if (!parsed.ok()) return refuse(SeriesRejection::kInvalidKey, parsed);
  if (check_limits) {
    for (const auto& [k, v] : parts.tags) {
      if (k == kMetricName) {
        return refuse(SeriesRejection::kInvalidKey,
                      Status::InvalidArgument("tag key __name__ is reserved for the metric name"));
      }
    }
    if (parts.tags.size() + 1 > limits_.max_labels_per_series) {
      return refuse(SeriesRejection::kLabelCount,
                    Status::InvalidArgument(
                        std::to_string(parts.tags.size() + 1) +
                        " labels (tags plus the metric name) exceed "
                        "limits.max_labels_per_series = " +
                        std::to_string(limits_.max_labels_per_series)));
    }
    if (parts.legacy) {
      return refuse(SeriesRejection::kInvalidKey,
                    Status::InvalidArgument("series key '" + std::string(key) +
                                            "' is not a label set (name{,tag=value})"));
    }
    std::size_t longest = parts.name.size();
    for (const auto& [k, v] : parts.tags) longest = std::max({longest, k.size(), v.size()});
    if (longest > limits_.max_label_bytes) {
      return refuse(SeriesRejection::kLabelBytes,
                    Status::InvalidArgument("a label name or value of " + std::to_string(longest) +
                                            " bytes exceeds limits.max_label_bytes = " +
                                            std::to_string(limits_.max_label_bytes)));
    }
    if (limits_.max_series != 0 && size() >= limits_.max_series) {
      return refuse(SeriesRejection::kMaxSeries,
                    Status::Busy("the node holds limits.max_series = " +
                                 std::to_string(limits_.max_series) + " series"));
    }
    if (!AllowNewSeriesLocked()) {
      return refuse(SeriesRejection::kRate,
                    Status::Busy("more than limits.max_new_series_per_minute = " +
                                 std::to_string(limits_.max_new_series_per_minute) +
                                 " new series in the last minute"));
    }
  }
  if (sid >= kRecordPages * kRecordsPerPage) {
    return refuse(SeriesRejection::kMaxSeries,
                  Status::Busy("series id space exhausted at " + std::to_string(sid)));
  }
  const std::string_view stored = keys_.Add(key);
  Record* r = MutableRecord(sid);
  r->key = stored.data();
  r->key_len = static_cast<std::uint32_t>(stored.size());
  r->type = type;
  if (findable) {
    Stripe& stripe = stripes_[hash >> 60];
    WriterLock lock(stripe.mu);
    stripe.table.Insert(hash, static_cast<std::uint32_t>(sid));
  }
  {
    WriterLock lock(mu_);
    const auto id = static_cast<std::uint32_t>(sid);
    AddPostingLocked(kMetricNameName, parts.name, id);
    for (const auto& [k, v] : parts.tags) AddPostingLocked(NameIndexLocked(k), v, id);
  }
  next_sid_ = std::max(next_sid_, sid + 1);
  if (sid > published_.load(std::memory_order_relaxed)) {
    published_.store(sid, std::memory_order_release);
  }
  count_.fetch_add(1, std::memory_order_relaxed);
  pending_.push_back(static_cast<std::uint32_t>(sid));
  SeriesGauge().Set(static_cast<std::int64_t>(size()));
  return Status::OK();
}

std::uint32_t SeriesIndex::NameIndexLocked(std::string_view name) {
  auto it = tag_names_.find(name);
  if (it != tag_names_.end()) return it->second;
  const std::string_view interned = values_.Add(name);
  const auto index = static_cast<std::uint32_t>(names_.size());
  names_.push_back(LabelName{interned, {}, 0});
  tag_names_.emplace(interned, index);
  return index;
}

void SeriesIndex::AddPostingLocked(std::uint32_t name, std::string_view value, std::uint32_t sid) {
  const std::uint64_t hash = HashPair(name, value);
  std::uint32_t pair = pair_table_.Find(hash, [&](std::uint32_t p) {
    mu_.AssertHeld();
    return pairs_[p].name == name && ValueOf(pairs_[p]) == value;
  });
  if (pair == 0) {
    pair = static_cast<std::uint32_t>(pairs_.size());
    // Values are not interned across names: a value shared by two label names is rare, and
    // interning would cost a table slot and a view per value for every high-cardinality label.
    const std::string_view stored = values_.Add(value);
    pairs_.push_back(Pair{stored.data(), static_cast<std::uint32_t>(stored.size()), name,
                          PostingList()});
    pair_table_.Insert(hash, pair);
    names_[name].pairs.push_back(pair);
  }
  pairs_[pair].ids.Add(sid);
  names_[name].series++;
}

Status SeriesIndex::Lookup(SeriesId sid, std::string* canonical_key, ValueType* type) const {
  const Record* r = RecordOf(sid);
  if (r == nullptr) return Status::NotFound("series id " + std::to_string(sid) + " unknown");
  if (canonical_key != nullptr) canonical_key->assign(r->key, r->key_len);
  if (type != nullptr) *type = r->type;
  return Status::OK();
}

std::string_view SeriesIndex::KeyOf(SeriesId sid, ValueType* type) const {
  const Record* r = RecordOf(sid);
  if (r == nullptr) return {};
  if (type != nullptr) *type = r->type;
  return {r->key, r->key_len};
}

void SeriesIndex::AppendDefinition(SeriesId sid, std::vector<std::uint8_t>* out) const {
  ValueType type = ValueType::kFloat;
  const std::string_view key = KeyOf(sid, &type);
  const std::size_t at = out->size();
  out->resize(at + kWalDefinitionHeaderBytes + key.size());
  std::uint8_t* p = out->data() + at;
  const auto len = static_cast<std::uint32_t>(key.size());
  std::memcpy(p, &sid, 8);
  p[8] = static_cast<std::uint8_t>(type);
  std::memcpy(p + 9, &len, 4);
  if (!key.empty()) std::memcpy(p + kWalDefinitionHeaderBytes, key.data(), key.size());
}

Status SeriesIndex::ForEachDefinition(
    std::span<const std::uint8_t> bytes,
    const std::function<Status(SeriesId, ValueType, std::string_view)>& fn) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < kWalDefinitionHeaderBytes) {
      return Status::Corruption("series definition header truncated at byte " +
                                std::to_string(pos) + " of " + std::to_string(bytes.size()));
    }
    SeriesId sid;
    std::uint32_t len;
    std::memcpy(&sid, bytes.data() + pos, 8);
    const std::uint8_t type = bytes[pos + 8];
    std::memcpy(&len, bytes.data() + pos + 9, 4);
    pos += kWalDefinitionHeaderBytes;
    if (type >= kValueTypeCount || sid == kInvalidSeriesId || len > bytes.size() - pos) {
      return Status::Corruption("series definition of id " + std::to_string(sid) + ": type " +
                                std::to_string(type) + ", key of " + std::to_string(len) +
                                " bytes with " + std::to_string(bytes.size() - pos) + " left");
    }
    INGOT_RETURN_IF_ERROR(fn(sid, static_cast<ValueType>(type),
                             std::string_view(reinterpret_cast<const char*>(bytes.data() + pos), len)));
    pos += len;
  }
  return Status::OK();
}

Status SeriesIndex::Restore(SeriesId sid, ValueType type, std::string_view key) {
  MutexLock create(create_mu_);
  if (sid >= kRecordPages * kRecordsPerPage) {
    return Status::Corruption("WAL defines series id " + std::to_string(sid) + ", out of range");
  }
  const Record* r = RecordOf(sid);
  if (r != nullptr) {
    std::string canonical;
    bool legacy = false;
    if (CanonicalKey(key, &canonical, &legacy).ok() &&
        canonical == std::string_view(r->key, r->key_len)) {
      return Status::OK();
    }
    return Status::Corruption("WAL defines series " + std::to_string(sid) + " as '" +
                              std::string(key) + "', but that id has another key");
  }
  // The series existed before the restart and may have sealed chunks: it is not new.
  first_new_sid_ = std::max(first_new_sid_, sid + 1);
  return AddExistingLocked(sid, type, key, "WAL");
}

Status SeriesIndex::CanonicalKey(std::string_view key, std::string* canonical, bool* legacy) {
  SeriesKeyParts parts;
  INGOT_RETURN_IF_ERROR(ParseSeriesKey(key, &parts));
  *legacy = parts.legacy;
  if (!parts.legacy) {
    canonical->assign(key);
    return Status::OK();
  }
  std::vector<TagView> tags;
  tags.reserve(parts.tags.size());
  for (const auto& [k, v] : parts.tags) tags.emplace_back(k, v);
  BuildLabelSetKey(parts.name, tags, canonical);
  return Status::OK();
}

Status SeriesIndex::AddExistingLocked(SeriesId sid, ValueType type, std::string_view stored_key,
                                      std::string_view source) {
  std::string key;
  bool legacy = false;
  INGOT_RETURN_IF_ERROR(CanonicalKey(stored_key, &key, &legacy)
                            .WithContext(std::string(source) + " series " + std::to_string(sid)));
  const std::uint64_t hash = HashKey(key);
  SeriesId known;
  {
    ReaderLock lock(stripes_[hash >> 60].mu);
    known = FindLocked(stripes_[hash >> 60], hash, key);
  }
  bool findable = true;
  if (known != kInvalidSeriesId) {
    if (!legacy) {
      return Status::Corruption(std::string(source) + " defines series " + std::to_string(sid) +
                                " as '" + key + "', which the index holds as series " +
                                std::to_string(known));
    }
    // Written before series were label sets: two line-protocol series whose names join to the same
    // metric name (`a_b c` and `a b_c`). Both keep their data; new points go to the first.
    findable = false;
    Logger("storage")->warn(
        "series {} ('{}') has the label set of series {}; "
        "both stay readable, new points go to "
        "series {}",
        sid, stored_key, known, known);
  }
  SeriesRejection rejection;
  return CreateLocked(key, hash, type, sid, /*check_limits=*/false, &rejection, findable)
      .WithContext(std::string(source) + " series " + std::to_string(sid));
}

Status SeriesIndex::FlushDefinitions(bool sync) {
  MutexLock flush(flush_mu_);
  std::vector<std::uint32_t> ids;
  SeriesId watermark;
  {
    MutexLock create(create_mu_);
    ids.swap(pending_);
    watermark = next_sid_;
  }
  if (ids.empty() && (!sync || durable_below_.load() >= watermark)) return Status::OK();
  rocksdb::WriteBatch batch;
  std::string value;
  for (std::uint32_t id : ids) {
    ValueType type = ValueType::kFloat;
    const std::string_view key = KeyOf(id, &type);
    std::uint8_t id_bytes[8];
    PutBigEndian64(id, id_bytes);
    value.assign(1, static_cast<char>(type));
    value.append(key);
    batch.Put(store_.series_by_id_cf(), rocksdb::Slice(reinterpret_cast<const char*>(id_bytes), 8),
              value);
  }
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  // An empty batch still syncs what earlier unsynced flushes wrote.
  Status st = ids.empty() ? FromRocks(store_.db()->FlushWAL(/*sync=*/true), "sync series definitions")
                          : FromRocks(store_.Write(wo, &batch), "write series definitions");
  if (!st.ok()) {
    // Keep them pending: the WAL still holds them, and the next flush retries.
    MutexLock create(create_mu_);
    pending_.insert(pending_.begin(), ids.begin(), ids.end());
    return st;
  }
  if (sync) durable_below_.store(watermark, std::memory_order_release);
  return Status::OK();
}

std::size_t SeriesIndex::pending_definitions() const {
  MutexLock create(create_mu_);
  return pending_.size();
}

const SeriesIndex::LabelName* SeriesIndex::FindName(std::string_view name) const {
  if (name == kMetricName) return &names_[kMetricNameName];
  auto it = tag_names_.find(name);
  return it == tag_names_.end() ? nullptr : &names_[it->second];
}

std::vector<SeriesId> SeriesIndex::PostingsCopy(std::uint32_t name, std::string_view value) const {
  const std::uint32_t pair = pair_table_.Find(HashPair(name, value), [&](std::uint32_t p) {
    mu_.AssertReaderHeld();
    return pairs_[p].name == name && ValueOf(pairs_[p]) == value;
  });
  return pair == 0 ? std::vector<SeriesId>{} : Widen(pairs_[pair].ids.ids());
}

std::vector<std::string> SeriesIndex::ValuesOf(std::uint32_t name) const {
  std::vector<std::string> out;
  out.reserve(names_[name].pairs.size());
  for (std::uint32_t p : names_[name].pairs) out.emplace_back(ValueOf(pairs_[p]));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<SeriesId> SeriesIndex::ByTag(std::string_view key, std::string_view value) const {
  ReaderLock lock(mu_);
  if (key == kMetricName) return PostingsCopy(kMetricNameName, value);
  auto it = tag_names_.find(key);
  return it == tag_names_.end() ? std::vector<SeriesId>{} : PostingsCopy(it->second, value);
}

std::vector<SeriesId> SeriesIndex::AllSeries() const {
  std::vector<SeriesId> out;
  out.reserve(size());
  const SeriesId last = max_sid();
  for (SeriesId sid = 1; sid <= last; ++sid) {
    if (RecordOf(sid) != nullptr) out.push_back(sid);
  }
  return out;
}

std::vector<std::string> SeriesIndex::TagKeys() const {
  ReaderLock lock(mu_);
  std::vector<std::string> out;
  out.reserve(tag_names_.size());
  for (const auto& [name, index] : tag_names_) out.emplace_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string_view> SeriesIndex::TagValues(std::string_view key) const {
  std::vector<std::string_view> out;
  {
    ReaderLock lock(mu_);
    const LabelName* name = FindName(key);
    if (name == nullptr) return out;
    out.reserve(name->pairs.size());
    for (std::uint32_t p : name->pairs) out.push_back(ValueOf(pairs_[p]));
  }
  // Sorted outside the lock: the views point into the arena, which never moves or frees.
  std::sort(out.begin(), out.end());
  return out;
}

void SeriesIndex::ForEachTagValue(
    std::string_view key,
    const std::function<void(std::string_view, std::span<const std::uint32_t>)>& fn) const {
  ReaderLock lock(mu_);
  const LabelName* name = FindName(key);
  if (name == nullptr) return;
  for (std::uint32_t p : name->pairs) fn(ValueOf(pairs_[p]), pairs_[p].ids.ids());
}

IndexStats SeriesIndex::Stats(std::size_t top_n) const {
  IndexStats stats;
  stats.series = size();
  auto top = [top_n](std::vector<IndexStats::Entry>* v) {
    const std::size_t n = std::min(top_n, v->size());
    std::partial_sort(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(n), v->end(),
                      [](const IndexStats::Entry& a, const IndexStats::Entry& b) {
                        return a.value != b.value ? a.value > b.value : a.name < b.name;
                      });
    v->resize(n);
  };
  ReaderLock lock(mu_);
  stats.label_pairs = pairs_.size() - 1;
  // Bounded work per entry kind: a top-N over every pair keeps at most top_n candidates.
  for (std::uint32_t p : names_[kMetricNameName].pairs) {
    stats.series_by_metric.push_back({std::string(ValueOf(pairs_[p])), pairs_[p].ids.size()});
  }
  std::vector<IndexStats::Entry> pairs;
  for (const auto& [name, index] : tag_names_) {
    const LabelName& ln = names_[index];
    stats.series_by_label.push_back({std::string(name), ln.series});
    stats.values_by_label.push_back({std::string(name), ln.pairs.size()});
    std::uint64_t bytes = 0;
    for (std::uint32_t p : ln.pairs) {
      bytes += ValueOf(pairs_[p]).size();
      const std::uint64_t n = pairs_[p].ids.size();
      if (pairs.size() >= top_n * 4 + 16) {
        top(&pairs);
        if (!pairs.empty() && n < pairs.back().value) continue;
      }
      pairs.push_back({std::string(name) + "=" + std::string(ValueOf(pairs_[p])), n});
    }
    stats.memory_bytes_by_label.push_back({std::string(name), bytes});
  }
  stats.series_by_label.push_back({std::string(kMetricName), names_[kMetricNameName].series});
  stats.values_by_label.push_back(
      {std::string(kMetricName), names_[kMetricNameName].pairs.size()});
  top(&stats.series_by_metric);
  top(&stats.series_by_label);
  top(&stats.values_by_label);
  top(&stats.memory_bytes_by_label);
  top(&pairs);
  stats.series_by_pair = std::move(pairs);
  return stats;
}

std::size_t SeriesIndex::memory_bytes() const {
  std::size_t bytes = 0;
  {
    MutexLock create(create_mu_);
    bytes += keys_.bytes_reserved() + pending_.capacity() * 4;
    const SeriesId last = next_sid_;
    bytes += (last / kRecordsPerPage + 1) * kRecordsPerPage * sizeof(Record);
  }
  for (const Stripe& s : stripes_) {
    ReaderLock lock(s.mu);
    bytes += s.table.heap_bytes();
  }
  ReaderLock lock(mu_);
  bytes += values_.bytes_reserved() + pair_table_.heap_bytes() + pairs_.size() * sizeof(Pair);
  for (const LabelName& n : names_) bytes += n.pairs.capacity() * 4;
  for (const Pair& p : pairs_) bytes += p.ids.heap_bytes();
  return bytes;
}

}  // namespace ingot
