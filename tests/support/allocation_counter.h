// Counts heap allocations of the whole test binary, for tests of no-allocation contracts. Linking
// the `ingot_test_allocation_counter` object library replaces the global operator new with a
// counting one; link it only into binaries that need it.
//
// Thread safety: the counter is atomic.
#pragma once

namespace ingot::testing {

// Allocations through operator new since the start of the process.
long AllocationCount();

}  // namespace ingot::testing
