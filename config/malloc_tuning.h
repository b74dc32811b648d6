// glibc malloc settings for a long-running process that frees large buffers often.
#pragma once

#include <malloc.h>

namespace ingot {

// A query's buffers (a day at 60 s steps: ~13 MB of columns over 1,000 series, the readers'
// sample and head vectors) are freed at its end. By default glibc hands the freed top of each
// thread's heap back to the kernel past 128 KiB, and serves every block of 128 KiB or more with
// its own mmap: the next query faults every page in again (~1,700 faults, ~10% of a range
// query's CPU, measured). Both thresholds at 32 MiB keep up to that much freed memory mapped per
// malloc arena and serve large blocks from the arenas. Setting either turns off glibc's dynamic
// adjustment of the mmap threshold, so both are set.
inline constexpr int kMallocKeptBytes = 32 << 20;

inline void KeepFreedMemoryMapped() {
  mallopt(M_TRIM_THRESHOLD, kMallocKeptBytes);
  mallopt(M_MMAP_THRESHOLD, kMallocKeptBytes);
}

}  // namespace ingot
