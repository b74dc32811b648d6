#include "config/config_loader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "config/metrics.h"
#include "config/status.h"

namespace ingot {
namespace {

TEST(ConfigLoader, DefaultsWithoutFileOrOverrides) {
  Options options;
  ASSERT_TRUE(LoadOptions("", {}, &options).ok());
  EXPECT_EQ(options.ingest.tcp_listen, "127.0.0.1:8089");
  EXPECT_EQ(options.query.http_listen, "127.0.0.1:8086");
  EXPECT_EQ(options.storage.wal_sync, "interval");
  EXPECT_EQ(options.storage.wal_sync_interval_ms, 100u);
  EXPECT_EQ(options.storage.retention_s, 0);
  EXPECT_EQ(options.ingest.max_line_bytes, 64u * 1024);
}

TEST(ConfigLoader, ShippedConfigLoadsAndMatchesDefaults) {
  Options options;
  Status st = LoadOptions(INGOT_SOURCE_DIR "/conf/ingot.toml", {}, &options);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const Options defaults;
  EXPECT_EQ(options.ingest.tcp_listen, defaults.ingest.tcp_listen);
  EXPECT_EQ(options.query.http_listen, defaults.query.http_listen);
  EXPECT_EQ(options.storage.data_dir, defaults.storage.data_dir);
  EXPECT_EQ(options.storage.wal_max_bytes, defaults.storage.wal_max_bytes);
  EXPECT_EQ(options.query.max_points, defaults.query.max_points);
}

TEST(ConfigLoader, FileValuesApply) {
  Options options;
  Status st = ApplyToml(R"(
[ingest]
tcp_listen = "127.0.0.1:9000"
max_line_bytes = 1024
[storage]
wal_sync = "always"
retention = "30d"
[log]
format = "json"
)",
                        "test.toml", &options);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(options.ingest.tcp_listen, "127.0.0.1:9000");
  EXPECT_EQ(options.ingest.max_line_bytes, 1024u);
  EXPECT_EQ(options.storage.wal_sync, "always");
  EXPECT_EQ(options.storage.retention_s, 30 * 86400);
  EXPECT_EQ(options.log.format, "json");
}

TEST(ConfigLoader, OverridesApplyAfterFile) {
  const std::string path = ::testing::TempDir() + "/ingot_override_test.toml";
  {
    std::ofstream f(path);
    f << "[ingest]\ntcp_listen = \"127.0.0.1:9000\"\n[query]\nmax_series = 10\n";
  }
  Options options;
  Status st = LoadOptions(path, {"ingest.tcp_listen=127.0.0.1:9100", "query.max_series=20",
                                 "storage.retention=12h", "storage.data_dir=/tmp/x"},
                          &options);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(options.ingest.tcp_listen, "127.0.0.1:9100");
  EXPECT_EQ(options.query.max_series, 20u);
  EXPECT_EQ(options.storage.retention_s, 12 * 3600);
  EXPECT_EQ(options.storage.data_dir, "/tmp/x");
  std::remove(path.c_str());
}

TEST(ConfigLoader, BooleanKeysTakeTomlBooleansAndTrueFalseOverrides) {
  Options options;
  EXPECT_TRUE(options.storage.compact_chunks);
  ASSERT_TRUE(ApplyToml("[storage]\ncompact_chunks = false\n", "x.toml", &options).ok());
  EXPECT_FALSE(options.storage.compact_chunks);
  ASSERT_TRUE(ApplyOverride("storage.compact_chunks=true", &options).ok());
  EXPECT_TRUE(options.storage.compact_chunks);
  const Status st = ApplyOverride("storage.compact_chunks=on", &options);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("true or false"), std::string::npos) << st.ToString();
}

// Each bad value must fail, and the message must name the key and show the value.
struct BadCase {
  const char* toml;
  const char* key;
  const char* value_text;
};

class BadTomlValue : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadTomlValue, FailsNamingKeyAndValue) {
  Options options;
  Status st = ApplyToml(GetParam().toml, "bad.toml", &options);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  const std::string msg(st.message());
  EXPECT_NE(msg.find(GetParam().key), std::string::npos) << msg;
  EXPECT_NE(msg.find(GetParam().value_text), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, BadTomlValue,
    ::testing::Values(
        BadCase{"[ingest]\nmax_line_bytes = 10\n", "ingest.max_line_bytes", "10"},
        BadCase{"[ingest]\nmax_line_bytes = -5\n", "ingest.max_line_bytes", "-5"},
        BadCase{"[ingest]\nmax_line_bytes = \"big\"\n", "ingest.max_line_bytes", "big"},
        BadCase{"[ingest]\nmax_line_bytes = 1.5\n", "ingest.max_line_bytes", "1.5"},
        BadCase{"[ingest]\nprecision = \"minutes\"\n", "ingest.precision", "minutes"},
        BadCase{"[ingest]\ntcp_listen = \"localhost\"\n", "ingest.tcp_listen", "localhost"},
        BadCase{"[ingest]\ntcp_listen = \"127.0.0.1:70000\"\n", "ingest.tcp_listen", "70000"},
        BadCase{"[ingest]\ntcp_listen = 8089\n", "ingest.tcp_listen", "8089"},
        BadCase{"[storage]\nwal_sync = \"sometimes\"\n", "storage.wal_sync", "sometimes"},
        BadCase{"[storage]\nwal_sync = true\n", "storage.wal_sync", "true"},
        BadCase{"[storage]\nretention = \"30 days\"\n", "storage.retention", "30 days"},
        BadCase{"[storage]\nwal_sync_interval_ms = 0\n", "storage.wal_sync_interval_ms", "0"},
        BadCase{"[storage]\ncompact_chunks = \"yes\"\n", "storage.compact_chunks", "yes"},
        BadCase{"[storage]\ncompact_chunks = 1\n", "storage.compact_chunks", "1"},
        BadCase{"[log]\nlevel = \"loud\"\n", "log.level", "loud"},
        BadCase{"[query]\nmax_points = 0\n", "query.max_points", "0"},
        BadCase{"[query]\nnot_a_key = 1\n", "query.not_a_key", "not_a_key"},
        BadCase{"[nosuchsection]\nx = 1\n", "nosuchsection.x", "nosuchsection"},
        BadCase{"toplevel = 1\n", "toplevel", "toplevel"}));

TEST(ConfigLoader, BadOverridesNameKey) {
  struct Case {
    const char* assignment;
    const char* key;
  } cases[] = {
      {"ingest.max_line_bytes=abc", "ingest.max_line_bytes"},
      {"ingest.max_line_bytes=1", "ingest.max_line_bytes"},
      {"storage.wal_sync=often", "storage.wal_sync"},
      {"no.such=1", "no.such"},
      {"query.http_listen=:x", "query.http_listen"},
  };
  for (const auto& c : cases) {
    Options options;
    Status st = ApplyOverride(c.assignment, &options);
    ASSERT_FALSE(st.ok()) << c.assignment;
    EXPECT_NE(std::string(st.message()).find(c.key), std::string::npos) << st.ToString();
  }
  Options options;
  Status st = ApplyOverride("missing_equals", &options);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("missing_equals"), std::string::npos);
}

TEST(ConfigLoader, SyntaxErrorNamesFileAndLine) {
  Options options;
  Status st = ApplyToml("[ingest]\ntcp_listen = \n", "broken.toml", &options);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("broken.toml:2"), std::string::npos) << st.ToString();
}

TEST(ConfigLoader, MissingFileIsIOError) {
  Options options;
  Status st = LoadOptions("/nonexistent/ingot.toml", {}, &options);
  EXPECT_TRUE(st.IsIOError());
  EXPECT_NE(std::string(st.message()).find("/nonexistent/ingot.toml"), std::string::npos);
}

TEST(ConfigLoader, SecurityIsOffByDefault) {
  Options options;
  ASSERT_TRUE(LoadOptions("", {}, &options).ok());
  EXPECT_FALSE(options.auth.enabled());
  EXPECT_FALSE(options.query.tls.enabled());
  EXPECT_FALSE(options.ingest.tls.enabled());
  EXPECT_EQ(options.query.tls.min_version, "1.2");
}

TEST(ConfigLoader, TlsAndAuthKeysApply) {
  Options options;
  Status st = LoadOptions("", {"query.tls_cert_file=/c.pem", "query.tls_key_file=/k.pem",
                               "query.tls_min_version=1.3", "ingest.tls_cert_file=/c2.pem",
                               "ingest.tls_key_file=/k2.pem", "auth.token=abc",
                               "auth.username=u", "auth.password=p"},
                          &options);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(options.query.tls.cert_file, "/c.pem");
  EXPECT_EQ(options.query.tls.key_file, "/k.pem");
  EXPECT_EQ(options.query.tls.min_version, "1.3");
  EXPECT_EQ(options.ingest.tls.cert_file, "/c2.pem");
  EXPECT_EQ(options.ingest.tls.min_version, "1.2");
  EXPECT_EQ(options.auth.token, "abc");
  EXPECT_TRUE(options.auth.enabled());
}

TEST(ConfigLoader, SecretFilesAreReadWithoutTheirLineBreak) {
  const std::string token_path = ::testing::TempDir() + "/ingot_token_test";
  const std::string password_path = ::testing::TempDir() + "/ingot_password_test";
  std::ofstream(token_path) << "tok en\n";
  std::ofstream(password_path) << "pw\r\n";
  Options options;
  Status st = LoadOptions("", {"auth.token_file=" + token_path, "auth.username=u",
                               "auth.password_file=" + password_path},
                          &options);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(options.auth.token, "tok en");
  EXPECT_EQ(options.auth.password, "pw");
  std::remove(token_path.c_str());
  std::remove(password_path.c_str());
}

TEST(ConfigLoader, SecuritySettingsThatDoNotFitAreRefused) {
  const std::string empty_path = ::testing::TempDir() + "/ingot_empty_secret_test";
  const std::string two_lines = ::testing::TempDir() + "/ingot_two_line_secret_test";
  std::ofstream(empty_path) << "\n";
  std::ofstream(two_lines) << "a\nb\n";
  struct Case {
    std::vector<std::string> overrides;
    const char* message_part;
  } cases[] = {
      {{"query.tls_cert_file=/c.pem"}, "query.tls_key_file"},
      {{"ingest.tls_key_file=/k.pem"}, "ingest.tls_cert_file"},
      {{"query.tls_min_version=1.1"}, "query.tls_min_version"},
      {{"auth.username=u"}, "auth.password"},
      {{"auth.password=p"}, "auth.username"},
      {{"auth.username=a:b", "auth.password=p"}, "':'"},
      {{"auth.token=a", "auth.token_file=" + empty_path}, "both set"},
      {{"auth.token_file=/nonexistent/token"}, "/nonexistent/token"},
      {{"auth.token_file=" + empty_path}, "is empty"},
      {{"auth.token_file=" + two_lines}, "more than one line"},
  };
  for (const auto& c : cases) {
    Options options;
    Status st = LoadOptions("", c.overrides, &options);
    ASSERT_FALSE(st.ok()) << c.overrides[0];
    EXPECT_NE(std::string(st.message()).find(c.message_part), std::string::npos)
        << st.ToString();
  }
  std::remove(empty_path.c_str());
  std::remove(two_lines.c_str());
}

TEST(Durations, ParseUnits) {
  std::int64_t s = -1;
  ASSERT_TRUE(ParseDurationSeconds("30d", &s).ok());
  EXPECT_EQ(s, 30 * 86400);
  ASSERT_TRUE(ParseDurationSeconds("90", &s).ok());
  EXPECT_EQ(s, 90);
  ASSERT_TRUE(ParseDurationSeconds("1500ms", &s).ok());
  EXPECT_EQ(s, 1);
  EXPECT_FALSE(ParseDurationSeconds("5x", &s).ok());
  EXPECT_FALSE(ParseDurationSeconds("", &s).ok());
  EXPECT_FALSE(ParseDurationSeconds("-1d", &s).ok());
}

TEST(Metrics, RendersPrometheusText) {
  MetricsRegistry registry;
  Counter& c = registry.AddCounter("test_total", "A test counter.", "reason=\"x\"");
  Gauge& g = registry.AddGauge("test_gauge", "A gauge.");
  Histogram& h = registry.AddHistogram("test_seconds", "A histogram.", {0.1, 1.0});
  c.Add(3);
  g.Set(-2);
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  std::string out;
  registry.RenderPrometheus(&out);
  EXPECT_NE(out.find("# TYPE test_total counter\ntest_total{reason=\"x\"} 3\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("test_gauge -2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("test_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("test_seconds_bucket{le=\"1\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("test_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("test_seconds_count 3\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace ingot
