#include "tests/chunk/test_util.h"

#include <gtest/gtest.h>

#include "config/logging.h"

namespace ingot::testing {

namespace {
// The suites provoke corrupt and torn data on purpose; keep their expected errors out of the log.
class QuietStorageLog : public ::testing::Environment {
 public:
  void SetUp() override { Logger("storage")->set_level(spdlog::level::critical); }
};
[[maybe_unused]] ::testing::Environment* const kQuietLog =
    ::testing::AddGlobalTestEnvironment(new QuietStorageLog);
}  // namespace

}  // namespace ingot::testing
