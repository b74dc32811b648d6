// The web UI's routes (node/ui_routes.h) over the assets compiled into this build, and the
// effective-configuration endpoint (node/config_routes.h), through the router.
#include "node/ui_routes.h"

#include <zlib.h>

#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/config_loader.h"
#include "node/config_routes.h"
#include "tests/query/query_test_util.h"

namespace ingot {
namespace {

using testing::MakeGet;
using testing::RunRequest;

std::string Gunzip(const std::string& gz) {
  std::string out(gz.size() * 20 + 1024, '\0');
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

class UiRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterUiRoutes(router_); }

  HttpReply Run(const std::string& target,
                std::vector<std::pair<http::field, std::string>> headers = {}) {
    HttpRequest request = MakeGet(target);
    for (const auto& [f, v] : headers) request.set(f, v);
    HttpReply reply;
    router_.Handle(request, reply);
    return reply;
  }

  HttpRouter router_;
};

TEST_F(UiRoutesTest, RootRedirectsToTheUi) {
  HttpReply r = Run("/");
  EXPECT_EQ(r.response.result(), http::status::found);
  EXPECT_EQ(r.response[http::field::location], "/ui/");
  r = Run("/ui");
  EXPECT_EQ(r.response.result(), http::status::moved_permanently);
  EXPECT_EQ(r.response[http::field::location], "/ui/");
  r = Run("/ui/index.html");
  EXPECT_EQ(r.response.result(), http::status::found);
  EXPECT_EQ(r.response[http::field::location], "/ui/");
}

TEST_F(UiRoutesTest, IndexIsRevalidatedAndNamesHashedAssets) {
  const HttpReply plain = Run("/ui/");
  ASSERT_EQ(plain.response.result(), http::status::ok);
  EXPECT_EQ(plain.response[http::field::content_type], "text/html; charset=utf-8");
  EXPECT_EQ(plain.response[http::field::cache_control], "no-cache");
  EXPECT_EQ(plain.response.count(http::field::content_encoding), 0u);
  const std::string html = plain.response.body();
  EXPECT_NE(html.find("<main id=\"main\""), std::string::npos);
  EXPECT_EQ(html.find("@@"), std::string::npos) << "every placeholder was replaced";

  // Every asset the page names is served, compressed for clients that take gzip, cacheable
  // for a year under its content-hashed name, and inflates to the same bytes as the plain answer.
  const std::regex asset(R"re((?:src|href)="(assets/[a-zA-Z]+\.[0-9a-f]{12}\.(js|css|svg))")re");
  int seen = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), asset);
       it != std::sregex_iterator(); ++it) {
    const std::string path = "/ui/" + (*it)[1].str();
    SCOPED_TRACE(path);
    const HttpReply gz = Run(path, {{http::field::accept_encoding, "gzip, deflate, br"}});
    ASSERT_EQ(gz.response.result(), http::status::ok);
    EXPECT_EQ(gz.response[http::field::content_encoding], "gzip");
    EXPECT_EQ(gz.response[http::field::cache_control], "public, max-age=31536000, immutable");
    EXPECT_EQ(gz.response[http::field::vary], "Accept-Encoding");
    const HttpReply identity = Run(path, {{http::field::accept_encoding, "gzip;q=0, identity"}});
    EXPECT_EQ(identity.response.count(http::field::content_encoding), 0u);
    EXPECT_EQ(Gunzip(gz.response.body()), identity.response.body());
    EXPECT_LT(gz.response.body().size(), identity.response.body().size());
    const std::string ext = (*it)[2].str();
    EXPECT_EQ(gz.response[http::field::content_type].substr(0, 8), ext == "js"    ? "text/jav"
                                                                   : ext == "css" ? "text/css"
                                                                                  : "image/sv");
    ++seen;
  }
  EXPECT_GE(seen, 5);  // icon (twice), two stylesheets, two scripts
}

TEST_F(UiRoutesTest, EtagAnswers304) {
  const HttpReply first = Run("/ui/");
  const std::string etag(first.response[http::field::etag]);
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(Run("/ui/", {{http::field::if_none_match, etag}}).response.result(),
            http::status::not_modified);
  EXPECT_EQ(Run("/ui/", {{http::field::if_none_match, "\"other\", " + etag}}).response.result(),
            http::status::not_modified);
  EXPECT_EQ(Run("/ui/", {{http::field::if_none_match, "\"other\""}}).response.result(),
            http::status::ok);
}

TEST_F(UiRoutesTest, UnknownFilesAre404) {
  const HttpReply r = Run("/ui/assets/app.000000000000.js");
  EXPECT_EQ(r.response.result(), http::status::not_found);
  EXPECT_NE(r.response.body().find("no such UI file: /ui/assets/app.000000000000.js"),
            std::string::npos);
}

TEST(AcceptsGzip, ParsesCodingsAndQualities) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("br, deflate"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.000"));
  EXPECT_TRUE(AcceptsGzip("gzip;q=0.001"));
}

TEST(ConfigRoutes, EffectiveConfigurationWithoutSecrets) {
  Options options;
  options.query.http_listen = "127.0.0.1:9999";
  options.storage.limits.max_series = 77;
  options.auth.token = "very-secret-token";
  options.auth.username = "admin";
  options.auth.password = "very-secret-password";
  HttpRouter router;
  RegisterConfigRoutes(router, options);
  const auto r = RunRequest(router, MakeGet("/api/v1/ingot/config"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body.find("very-secret"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["status"], "success");
  EXPECT_EQ(j["data"]["query"]["http_listen"], "127.0.0.1:9999");
  EXPECT_EQ(j["data"]["limits"]["max_series"], 77);
  EXPECT_EQ(j["data"]["storage"]["wal_sync"], "interval");
  EXPECT_EQ(j["data"]["auth"]["token_set"], true);
  EXPECT_EQ(j["data"]["auth"]["password_set"], true);
  EXPECT_EQ(j["data"]["auth"]["username"], "admin");
  // Every key the loader knows, under the names conf/ingot.toml uses, and reading back the same.
  EXPECT_EQ(j["data"]["storage"]["compact_chunks"], true);
  EXPECT_EQ(j["data"]["storage"]["retention"], std::to_string(options.storage.retention_s) + "s");
  std::size_t keys = 0;
  for (const auto& [section, values] : j["data"].items()) keys += values.size();
  std::size_t known = 0;
  ForEachConfigValue(options, [&](std::string_view, const std::string&) { ++known; });
  EXPECT_EQ(keys, known + 1);  // and storage.max_open_files, worked out at start
}

}  // namespace
}  // namespace ingot
