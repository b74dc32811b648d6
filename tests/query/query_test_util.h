// Helpers shared by the query suites: a real Storage in a temporary directory with the query
// routes registered, data loading, and running a request through the router without sockets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "chunk/series_key.h"
#include "chunk/storage.h"
#include "config/clock.h"
#include "config/options.h"
#include "config/http.h"
#include "config/url_encoding.h"
#include "tests/support/temp_dir.h"

namespace ingot::testing {

using ScratchDir = TempDir;

struct Response {
  int status = 0;
  std::string content_type;
  std::string body;
  bool streamed = false;
};

// Runs `request` through `router`, draining a streamed body.
Response RunRequest(const HttpRouter& router, const HttpRequest& request);
HttpRequest MakeGet(const std::string& target);
HttpRequest MakePost(const std::string& target, const std::string& form_body);

using Points = std::vector<std::pair<std::int64_t, double>>;

// Nanoseconds per second, and the start of the suites' data (2023-11-14T22:13:20Z).
inline constexpr std::int64_t kSec = 1'000'000'000;
inline constexpr std::int64_t kT0 = 1'700'000'000 * kSec;

class QueryFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Re-registers the routes with different options.
  void Configure(const QueryOptions& options);
  // Closes the storage and opens it again on the same directory (routes re-registered with the last
  // options).
  void Reopen();

  // Creates (or finds) series measurement,tags field and appends points in one batch.
  SeriesId Add(const std::string& measurement,
               std::vector<std::pair<std::string, std::string>> tags, const std::string& field,
               const Points& points, ValueType type = ValueType::kFloat);

  Response Get(const std::string& target) { return RunRequest(*router_, MakeGet(target)); }
  Response Post(const std::string& target, const std::string& body) {
    return RunRequest(*router_, MakePost(target, body));
  }

  ScratchDir dir_;
  ManualClock clock_{1'700'000'000'000'000'000};
  StorageOptions storage_options_;
  QueryOptions query_options_;
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<HttpRouter> router_;
};

}  // namespace ingot::testing
