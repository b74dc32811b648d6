#include "chunk/series_index.h"

#include <rocksdb/write_batch.h>

#include "config/metrics.h"

namespace ingot {

namespace {

Gauge& SeriesGauge() {
  static Gauge& g =
      MetricsRegistry::Default().AddGauge("ingot_series", "Series known to the index.");
  return g;
}

}  // namespace

Status SeriesIndex::Load(ChunkStore& store, std::unique_ptr<SeriesIndex>* index) {
  std::unique_ptr<SeriesIndex> idx(new SeriesIndex(store));
  std::unique_ptr<rocksdb::Iterator> it(
      store.db()->NewIterator(rocksdb::ReadOptions(), store.series_by_id_cf()));
  SeriesKeyParts parts;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key();
    const rocksdb::Slice v = it->value();
    if (k.size() != 8 || v.size() < 1 || static_cast<std::uint8_t>(v[0]) >= kValueTypeCount) {
      return Status::Corruption("series_by_id: malformed entry (key " +
                                std::to_string(k.size()) + " bytes, value " +
                                std::to_string(v.size()) + " bytes)");
    }
    const SeriesId sid = GetBigEndian64(reinterpret_cast<const std::uint8_t*>(k.data()));
    std::string key(v.data() + 1, v.size() - 1);
    INGOT_RETURN_IF_ERROR(
        ParseSeriesKey(key, &parts).WithContext("series " + std::to_string(sid)));
    idx->InsertLocked(std::move(key), sid, static_cast<ValueType>(v[0]), parts);
    idx->next_sid_ = std::max(idx->next_sid_, sid + 1);
  }
  INGOT_RETURN_IF_ERROR(FromRocks(it->status(), "load series index"));
  SeriesGauge().Set(static_cast<std::int64_t>(idx->by_key_.size()));
  *index = std::move(idx);
  return Status::OK();
}

void SeriesIndex::InsertLocked(std::string key, SeriesId sid, ValueType type,
                               const SeriesKeyParts& parts) {
  auto [it, inserted] = by_key_.emplace(std::move(key), Entry{sid, type});
  if (!inserted) return;
  if (by_id_.size() <= sid) {
    by_id_.resize(sid + 1, nullptr);
    type_by_id_.resize(sid + 1, ValueType::kFloat);
  }
  by_id_[sid] = &it->first;
  type_by_id_[sid] = type;
  // Ids arrive ascending (creation order, or id order at load), so push_back keeps lists sorted.
  by_measurement_[parts.measurement].push_back(sid);
  by_field_[parts.field].push_back(sid);
  for (const auto& [k, v] : parts.tags) by_tag_[k][v].push_back(sid);
}

SeriesId SeriesIndex::Find(std::string_view canonical_key, ValueType* type) const {
  std::shared_lock lock(mu_);
  auto it = by_key_.find(canonical_key);
  if (it == by_key_.end()) return kInvalidSeriesId;
  if (type != nullptr) *type = it->second.type;
  return it->second.sid;
}

Status SeriesIndex::Resolve(std::string_view canonical_key, ValueType type, SeriesId* sid,
                            ValueType* stored_type) {
  {
    std::shared_lock lock(mu_);
    auto it = by_key_.find(canonical_key);
    if (it != by_key_.end()) {
      *sid = it->second.sid;
      *stored_type = it->second.type;
      return Status::OK();
    }
  }
  return ResolveMany(std::span<const std::string_view>(&canonical_key, 1),
                     std::span<const ValueType>(&type, 1), std::span<SeriesId>(sid, 1),
                     std::span<ValueType>(stored_type, 1));
}

Status SeriesIndex::ResolveMany(std::span<const std::string_view> keys,
                                std::span<const ValueType> types, std::span<SeriesId> sids,
                                std::span<ValueType> stored_types) {
  const std::size_t n = keys.size();
  std::vector<std::size_t> missing;
  {
    std::shared_lock lock(mu_);
    for (std::size_t i = 0; i < n; ++i) {
      auto it = by_key_.find(keys[i]);
      if (it == by_key_.end()) {
        missing.push_back(i);
      } else {
        sids[i] = it->second.sid;
        stored_types[i] = it->second.type;
      }
    }
  }
  if (missing.empty()) return Status::OK();

  std::lock_guard create(create_mu_);
  // Another creator may have won the race since the shared lookup; only creators change by_key_
  // and they are serialized by create_mu_, so this re-check is stable until we publish.
  struct NewSeries {
    std::size_t input;
    SeriesKeyParts parts;
  };
  std::vector<NewSeries> fresh;
  rocksdb::WriteBatch batch;
  {
    std::shared_lock lock(mu_);
    for (std::size_t i : missing) {
      auto it = by_key_.find(keys[i]);
      if (it != by_key_.end()) {
        sids[i] = it->second.sid;
        stored_types[i] = it->second.type;
        continue;
      }
      // The same new key twice in one batch: the first occurrence creates it.
      bool duplicate = false;
      for (const NewSeries& f : fresh) {
        if (keys[f.input] == keys[i]) {
          sids[i] = sids[f.input];
          stored_types[i] = stored_types[f.input];
          duplicate = true;
          break;
        }
      }
      if (duplicate) continue;
      NewSeries f{i, {}};
      INGOT_RETURN_IF_ERROR(ParseSeriesKey(keys[i], &f.parts));
      const SeriesId sid = next_sid_ + fresh.size();
      sids[i] = sid;
      stored_types[i] = types[i];
      std::uint8_t id_bytes[9];
      PutBigEndian64(sid, id_bytes);
      id_bytes[8] = static_cast<std::uint8_t>(types[i]);
      std::string by_id_value;
      by_id_value.reserve(keys[i].size() + 1);
      by_id_value.push_back(static_cast<char>(types[i]));
      by_id_value.append(keys[i]);
      batch.Put(store_.series_cf(), rocksdb::Slice(keys[i].data(), keys[i].size()),
                rocksdb::Slice(reinterpret_cast<const char*>(id_bytes), 9));
      batch.Put(store_.series_by_id_cf(),
                rocksdb::Slice(reinterpret_cast<const char*>(id_bytes), 8), by_id_value);
      fresh.push_back(std::move(f));
    }
  }
  if (fresh.empty()) return Status::OK();
  rocksdb::WriteOptions wo;
  wo.sync = true;  // a series exists before any of its points is acknowledged
  INGOT_RETURN_IF_ERROR(FromRocks(store_.db()->Write(wo, &batch), "create series"));
  {
    std::unique_lock lock(mu_);
    for (NewSeries& f : fresh) {
      InsertLocked(std::string(keys[f.input]), sids[f.input], types[f.input], f.parts);
    }
    next_sid_ += fresh.size();
    SeriesGauge().Set(static_cast<std::int64_t>(by_key_.size()));
  }
  return Status::OK();
}

Status SeriesIndex::Lookup(SeriesId sid, std::string* canonical_key, ValueType* type) const {
  std::shared_lock lock(mu_);
  if (sid >= by_id_.size() || by_id_[sid] == nullptr) {
    return Status::NotFound("series id " + std::to_string(sid) + " unknown");
  }
  if (canonical_key != nullptr) *canonical_key = *by_id_[sid];
  if (type != nullptr) *type = type_by_id_[sid];
  return Status::OK();
}

std::vector<SeriesId> SeriesIndex::ByMeasurement(std::string_view measurement) const {
  std::shared_lock lock(mu_);
  auto it = by_measurement_.find(measurement);
  return it == by_measurement_.end() ? IdList{} : it->second;
}

std::vector<SeriesId> SeriesIndex::ByField(std::string_view field) const {
  std::shared_lock lock(mu_);
  auto it = by_field_.find(field);
  return it == by_field_.end() ? IdList{} : it->second;
}

std::vector<SeriesId> SeriesIndex::ByTag(std::string_view key, std::string_view value) const {
  std::shared_lock lock(mu_);
  auto k = by_tag_.find(key);
  if (k == by_tag_.end()) return {};
  auto v = k->second.find(value);
  return v == k->second.end() ? IdList{} : v->second;
}

std::vector<SeriesId> SeriesIndex::AllSeries() const {
  std::shared_lock lock(mu_);
  std::vector<SeriesId> out;
  out.reserve(by_key_.size());
  for (SeriesId sid = 1; sid < by_id_.size(); ++sid) {
    if (by_id_[sid] != nullptr) out.push_back(sid);
  }
  return out;
}

std::vector<std::string> SeriesIndex::Measurements() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, ids] : by_measurement_) out.push_back(name);
  return out;
}

std::vector<std::string> SeriesIndex::Fields() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, ids] : by_field_) out.push_back(name);
  return out;
}

std::vector<std::string> SeriesIndex::TagKeys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, values] : by_tag_) out.push_back(name);
  return out;
}

std::vector<std::string> SeriesIndex::TagValues(std::string_view key) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  auto k = by_tag_.find(key);
  if (k == by_tag_.end()) return out;
  for (const auto& [value, ids] : k->second) out.push_back(value);
  return out;
}

void SeriesIndex::ForEachTagValue(
    std::string_view key,
    const std::function<void(std::string_view, std::span<const SeriesId>)>& fn) const {
  std::shared_lock lock(mu_);
  auto k = by_tag_.find(key);
  if (k == by_tag_.end()) return;
  for (const auto& [value, ids] : k->second) fn(value, ids);
}

std::size_t SeriesIndex::size() const {
  std::shared_lock lock(mu_);
  return by_key_.size();
}

}  // namespace ingot
