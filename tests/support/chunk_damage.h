// Finding the chunks a test damages behind the storage's back (see file_damage.h for the damage).
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
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

}  // namespace ingot::testing
