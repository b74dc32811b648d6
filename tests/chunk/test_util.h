// Helpers shared by the storage tests (temporary directories and options come from
// tests/support; this suite adds a quieter storage log).
#pragma once

#include "tests/support/temp_dir.h"
