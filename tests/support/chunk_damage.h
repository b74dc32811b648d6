// Finding the chunks a test damages behind the storage's back (see file_damage.h for the damage).
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chunk/storage.h"

namespace ingot::testing {

// Flushes the chunks family, so that every sealed chunk is in its SST files, and returns the
// largest of them ("" when there is none) with its size in `*size`. A third of the way into it
// lies inside its data blocks: the index and footer are at the end.
inline std::string FlushedLargestChunksFile(Storage& storage, std::uint64_t* size) {
  rocksdb::DB* db = storage.chunks().db();
  if (!db->Flush(rocksdb::FlushOptions(), storage.chunks().chunks_cf()).ok()) return "";
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  std::string target;
  *size = 0;
  for (const auto& f : files) {
    if (f.column_family_name == "chunks" && f.size > *size) {
      *size = f.size;
      target = f.db_path + f.name;
    }
  }
  return target;
}

// Behind the storage's back (it must be closed): XORs 0x10 into the middle byte of the stored
// chunk of `sid` keyed at `first_ts_ns`, in the database under `db_dir`. False when the chunk
// cannot be read or written.
inline bool FlipStoredChunkByte(const std::string& db_dir, const StorageOptions& options,
                                SeriesId sid, std::int64_t first_ts_ns) {
  std::unique_ptr<ChunkStore> store;
  if (!ChunkStore::Open(db_dir, options, &store).ok()) return false;
  const ChunkKey key = EncodeChunkKey(sid, first_ts_ns);
  std::string value;
  if (!store->db()->Get(rocksdb::ReadOptions(), store->chunks_cf(), key.slice(), &value).ok() ||
      value.empty()) {
    return false;
  }
  value[value.size() / 2] ^= 0x10;
  return store->db()->Put(rocksdb::WriteOptions(), store->chunks_cf(), key.slice(), value).ok() &&
         store->Close().ok();
}

}  // namespace ingot::testing
