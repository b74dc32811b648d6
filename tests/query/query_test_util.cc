#include "tests/query/query_test_util.h"

#include <cstdlib>
#include <filesystem>

#include "query/query_routes.h"
#include "tests/support/point_batch.h"

namespace ingot::testing {


Response RunRequest(const HttpRouter& router, const HttpRequest& request) {
  HttpReply reply;
  reply.response.version(11);
  router.Handle(request, reply);
  Response r;
  r.status = static_cast<int>(reply.response.result_int());
  r.content_type = std::string(reply.response[http::field::content_type]);
  r.body = reply.response.body();
  if (reply.stream) {
    r.streamed = true;
    std::string chunk;
    bool more = true;
    while (more) {
      chunk.clear();
      more = reply.stream(&chunk);
      r.body += chunk;
    }
  }
  return r;
}

HttpRequest MakeGet(const std::string& target) {
  HttpRequest request(http::verb::get, target, 11);
  return request;
}

HttpRequest MakePost(const std::string& target, const std::string& form_body) {
  HttpRequest request(http::verb::post, target, 11);
  request.set(http::field::content_type, "application/x-www-form-urlencoded");
  request.body() = form_body;
  request.prepare_payload();
  return request;
}

void QueryFixture::SetUp() {
  storage_options_.data_dir = dir_.path();
  storage_options_.wal_sync = "none";
  storage_options_.block_cache_bytes = 8 << 20;
  storage_options_.checkpoint_interval_ms = 3'600'000;
  ASSERT_TRUE(Storage::Open(storage_options_, 2, clock_, &storage_).ok());
  Configure(QueryOptions{});
}

void QueryFixture::Reopen() {
  router_.reset();
  ASSERT_TRUE(storage_->Close().ok());
  storage_.reset();
  ASSERT_TRUE(Storage::Open(storage_options_, 2, clock_, &storage_).ok());
  Configure(query_options_);
}

void QueryFixture::TearDown() {
  router_.reset();
  if (storage_) {
    EXPECT_TRUE(storage_->Close().ok());
  }
  storage_.reset();
}

void QueryFixture::Configure(const QueryOptions& options) {
  query_options_ = options;
  router_ = std::make_unique<HttpRouter>();
  RegisterQueryRoutes(*router_, *storage_, options);
}

SeriesId QueryFixture::Add(const std::string& measurement,
                           std::vector<std::pair<std::string, std::string>> tags,
                           const std::string& field, const Points& points, ValueType type) {
  std::sort(tags.begin(), tags.end());
  std::vector<TagView> views;
  for (const auto& [k, v] : tags) views.emplace_back(k, v);
  std::string key;
  BuildSeriesKey(measurement, views, field, &key);
  SeriesId sid = 0;
  ValueType stored;
  EXPECT_TRUE(storage_->index().Resolve(key, type, &sid, &stored).ok());
  const std::vector<PointRecord> batch = PointBatch(sid, points, type);
  if (!batch.empty()) {
    AppendResult result;
    EXPECT_TRUE(storage_->shard(storage_->ShardOf(sid)).Append(batch, &result).ok());
    EXPECT_EQ(result.accepted, batch.size());
  }
  return sid;
}

}  // namespace ingot::testing
