#include "config/config_loader.h"

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

#include <toml++/toml.h>

#include "config/json_string.h"

namespace ingot {
namespace {

// A value as it arrives: from TOML it keeps its TOML type; from the command line it is text and is
// converted to the key's type.
struct RawValue {
  enum class Kind { kString, kInteger, kBool, kFloat, kOther } kind;
  std::string text;  // for messages and string keys
  std::int64_t integer = 0;
};

enum class KeyType { kString, kUnsigned, kEnum, kListen, kDuration, kBool };

struct KeyDef {
  const char* name;
  KeyType type;
  std::uint64_t min = 0;
  std::uint64_t max = 0;
  const char* allowed = "";  // enum: "|"-separated choices
  std::function<void(Options*, const std::string&, std::uint64_t)> set;
  // The value in `options` as JSON text (durations as "<seconds>s", which reads back the same).
  std::function<std::string(const Options&)> get;
};

std::string JsonText(std::string_view s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

#define INGOT_STR(field)                                                 \
  [](Options* o, const std::string& s, std::uint64_t) { o->field = s; }, \
      [](const Options& o) { return JsonText(o.field); }
#define INGOT_U(field)                                  \
  [](Options* o, const std::string&, std::uint64_t v) { \
    o->field = static_cast<decltype(o->field)>(v);      \
  },                                                    \
      [](const Options& o) { return std::to_string(o.field); }
#define INGOT_SECONDS(field)                            \
  [](Options* o, const std::string&, std::uint64_t v) { \
    o->field = static_cast<decltype(o->field)>(v);      \
  },                                                    \
      [](const Options& o) { return JsonText(std::to_string(o.field) + "s"); }

const std::vector<KeyDef>& Keys() {
  static const std::vector<KeyDef> keys = {
      {"log.level", KeyType::kEnum, 0, 0, "trace|debug|info|warn|error|off", INGOT_STR(log.level)},
      {"log.format", KeyType::kEnum, 0, 0, "text|json", INGOT_STR(log.format)},
      {"ingest.tcp_listen", KeyType::kListen, 0, 0, "", INGOT_STR(ingest.tcp_listen)},
      {"ingest.precision", KeyType::kEnum, 0, 0, "ns|us|ms|s", INGOT_STR(ingest.precision)},
      {"ingest.max_line_bytes", KeyType::kUnsigned, 256, 64u << 20, "",
       INGOT_U(ingest.max_line_bytes)},
      {"ingest.max_connections", KeyType::kUnsigned, 1, 1'000'000, "",
       INGOT_U(ingest.max_connections)},
      {"ingest.idle_timeout_ms", KeyType::kUnsigned, 100, 86'400'000, "",
       INGOT_U(ingest.idle_timeout_ms)},
      {"ingest.io_threads", KeyType::kUnsigned, 0, 256, "", INGOT_U(ingest.io_threads)},
      {"ingest.shards", KeyType::kUnsigned, 0, 256, "", INGOT_U(ingest.shards)},
      {"ingest.shard_queue_batches", KeyType::kUnsigned, 1, 65536, "",
       INGOT_U(ingest.shard_queue_batches)},
      {"ingest.max_body_bytes", KeyType::kUnsigned, 1024, 1ull << 34, "",
       INGOT_U(ingest.max_body_bytes)},
      {"ingest.string_fields", KeyType::kEnum, 0, 0, "reject|drop",
       INGOT_STR(ingest.string_fields)},
      {"storage.data_dir", KeyType::kString, 0, 0, "", INGOT_STR(storage.data_dir)},
      {"storage.wal_sync", KeyType::kEnum, 0, 0, "always|interval|none",
       INGOT_STR(storage.wal_sync)},
      {"storage.wal_sync_interval_ms", KeyType::kUnsigned, 1, 60'000, "",
       INGOT_U(storage.wal_sync_interval_ms)},
      {"storage.wal_max_bytes", KeyType::kUnsigned, 1u << 20, 1ull << 40, "",
       INGOT_U(storage.wal_max_bytes)},
      {"storage.checkpoint_interval_ms", KeyType::kUnsigned, 1000, 86'400'000, "",
       INGOT_U(storage.checkpoint_interval_ms)},
      {"storage.retention", KeyType::kDuration, 0, 100ull * 366 * 86400, "",
       INGOT_SECONDS(storage.retention_s)},
      {"storage.late_max_age", KeyType::kDuration, 0, 100ull * 366 * 86400, "",
       INGOT_SECONDS(storage.late_max_age_s)},
      {"storage.late_buffer_points", KeyType::kUnsigned, 1024, 1ull << 32, "",
       INGOT_U(storage.late_buffer_points)},
      {"storage.late_compaction_points_per_s", KeyType::kUnsigned, 0, 1ull << 40, "",
       INGOT_U(storage.late_compaction_points_per_s)},
      {"storage.block_cache_bytes", KeyType::kUnsigned, 0, 1ull << 40, "",
       INGOT_U(storage.block_cache_bytes)},
      {"storage.compact_chunks", KeyType::kBool, 0, 1, "",
       [](Options* o, const std::string&, std::uint64_t v) { o->storage.compact_chunks = v != 0; },
       [](const Options& o) { return std::string(o.storage.compact_chunks ? "true" : "false"); }},
      {"storage.group_chunks", KeyType::kBool, 0, 1, "",
       [](Options* o, const std::string&, std::uint64_t v) { o->storage.group_chunks = v != 0; },
       [](const Options& o) { return std::string(o.storage.group_chunks ? "true" : "false"); }},
      {"limits.max_series", KeyType::kUnsigned, 0, 1ull << 31, "",
       INGOT_U(storage.limits.max_series)},
      {"limits.max_new_series_per_minute", KeyType::kUnsigned, 0, 1ull << 31, "",
       INGOT_U(storage.limits.max_new_series_per_minute)},
      {"limits.max_labels_per_series", KeyType::kUnsigned, 2, 65535, "",
       INGOT_U(storage.limits.max_labels_per_series)},
      {"limits.max_label_bytes", KeyType::kUnsigned, 16, 1u << 20, "",
       INGOT_U(storage.limits.max_label_bytes)},
      {"limits.max_series_key_bytes", KeyType::kUnsigned, 64, 1u << 24, "",
       INGOT_U(storage.limits.max_series_key_bytes)},
      {"query.http_listen", KeyType::kListen, 0, 0, "", INGOT_STR(query.http_listen)},
      {"query.http_threads", KeyType::kUnsigned, 1, 256, "", INGOT_U(query.http_threads)},
      {"query.workers", KeyType::kUnsigned, 0, 256, "", INGOT_U(query.workers)},
      {"query.write_workers", KeyType::kUnsigned, 0, 256, "", INGOT_U(query.write_workers)},
      {"query.parallelism", KeyType::kUnsigned, 0, 256, "", INGOT_U(query.parallelism)},
      {"query.max_connections", KeyType::kUnsigned, 1, 1'000'000, "",
       INGOT_U(query.max_connections)},
      {"query.max_request_bytes", KeyType::kUnsigned, 1024, 1ull << 34, "",
       INGOT_U(query.max_request_bytes)},
      {"query.max_inflight_request_bytes", KeyType::kUnsigned, 1024, 1ull << 40, "",
       INGOT_U(query.max_inflight_request_bytes)},
      {"query.idle_timeout_ms", KeyType::kUnsigned, 100, 86'400'000, "",
       INGOT_U(query.idle_timeout_ms)},
      {"query.timeout_ms", KeyType::kUnsigned, 100, 86'400'000, "", INGOT_U(query.timeout_ms)},
      {"query.max_concurrent", KeyType::kUnsigned, 1, 100'000, "", INGOT_U(query.max_concurrent)},
      {"query.max_points", KeyType::kUnsigned, 1, 1ull << 40, "", INGOT_U(query.max_points)},
      {"query.max_series", KeyType::kUnsigned, 1, 100'000'000, "", INGOT_U(query.max_series)},
      {"query.lookback_ms", KeyType::kUnsigned, 1, 86'400'000ull * 365, "",
       INGOT_U(query.lookback_ms)},
      {"query.damaged_chunks", KeyType::kEnum, 0, 0, "skip|fail", INGOT_STR(query.damaged_chunks)},
      {"ingest.tls_cert_file", KeyType::kString, 0, 0, "", INGOT_STR(ingest.tls.cert_file)},
      {"ingest.tls_key_file", KeyType::kString, 0, 0, "", INGOT_STR(ingest.tls.key_file)},
      {"ingest.tls_min_version", KeyType::kEnum, 0, 0, "1.2|1.3",
       INGOT_STR(ingest.tls.min_version)},
      {"query.tls_cert_file", KeyType::kString, 0, 0, "", INGOT_STR(query.tls.cert_file)},
      {"query.tls_key_file", KeyType::kString, 0, 0, "", INGOT_STR(query.tls.key_file)},
      {"query.tls_min_version", KeyType::kEnum, 0, 0, "1.2|1.3", INGOT_STR(query.tls.min_version)},
      {"auth.token", KeyType::kString, 0, 0, "", INGOT_STR(auth.token)},
      {"auth.token_file", KeyType::kString, 0, 0, "", INGOT_STR(auth.token_file)},
      {"auth.username", KeyType::kString, 0, 0, "", INGOT_STR(auth.username)},
      {"auth.password", KeyType::kString, 0, 0, "", INGOT_STR(auth.password)},
      {"auth.password_file", KeyType::kString, 0, 0, "", INGOT_STR(auth.password_file)},
      {"cluster.name", KeyType::kString, 0, 0, "", INGOT_STR(cluster.name)},
      {"cluster.node_id", KeyType::kString, 0, 0, "", INGOT_STR(cluster.node_id)},
      {"cluster.nats_urls", KeyType::kString, 0, 0, "", INGOT_STR(cluster.nats_urls)},
      {"cluster.advertise_http", KeyType::kListen, 0, 0, "", INGOT_STR(cluster.advertise_http)},
      {"cluster.partitions", KeyType::kUnsigned, 1, 999, "", INGOT_U(cluster.partitions)},
      {"cluster.replication", KeyType::kUnsigned, 1, 16, "", INGOT_U(cluster.replication)},
      {"cluster.stream_replicas", KeyType::kUnsigned, 1, 5, "", INGOT_U(cluster.stream_replicas)},
      {"cluster.stream_max_age", KeyType::kDuration, 0, 100ull * 366 * 86400, "",
       INGOT_SECONDS(cluster.stream_max_age_s)},
      {"cluster.batch_max_bytes", KeyType::kUnsigned, 4096, 512u << 10, "",
       INGOT_U(cluster.batch_max_bytes)},
      {"cluster.compress_log", KeyType::kBool, 0, 1, "",
       [](Options* o, const std::string&, std::uint64_t v) { o->cluster.compress_log = v != 0; },
       [](const Options& o) { return std::string(o.cluster.compress_log ? "true" : "false"); }},
      {"cluster.publish_timeout_ms", KeyType::kUnsigned, 100, 600'000, "",
       INGOT_U(cluster.publish_timeout_ms)},
      {"cluster.lease_renew_ms", KeyType::kUnsigned, 50, 60'000, "",
       INGOT_U(cluster.lease_renew_ms)},
      {"cluster.lease_ttl_ms", KeyType::kUnsigned, 200, 600'000, "", INGOT_U(cluster.lease_ttl_ms)},
      {"cluster.dead_node_grace_ms", KeyType::kUnsigned, 0, 86'400'000, "",
       INGOT_U(cluster.dead_node_grace_ms)},
      {"cluster.peer_timeout_ms", KeyType::kUnsigned, 100, 600'000, "",
       INGOT_U(cluster.peer_timeout_ms)},
  };
  return keys;
}

#undef INGOT_STR
#undef INGOT_U
#undef INGOT_SECONDS

const char* TypeName(KeyType type) {
  switch (type) {
    case KeyType::kString:
      return "a string";
    case KeyType::kUnsigned:
      return "an integer";
    case KeyType::kEnum:
      return "one of the listed strings";
    case KeyType::kListen:
      return "a \"host:port\" string";
    case KeyType::kDuration:
      return "a duration string like \"30d\", \"12h\", \"0\"";
    case KeyType::kBool:
      return "true or false";
  }
  return "?";
}

Status Invalid(const KeyDef& key, const std::string& value, const std::string& allowed) {
  return Status::InvalidArgument("config key '" + std::string(key.name) + "': invalid value " +
                                 value + "; allowed: " + allowed);
}

std::string RangeText(const KeyDef& key) {
  return "an integer in [" + std::to_string(key.min) + ", " + std::to_string(key.max) + "]";
}

Status ApplyValue(const KeyDef& key, const RawValue& raw, Options* options) {
  const bool is_text = raw.kind == RawValue::Kind::kString;
  switch (key.type) {
    case KeyType::kString:
      if (!is_text) return Invalid(key, raw.text, TypeName(key.type));
      if (raw.text.empty()) return Invalid(key, "\"\"", "a non-empty string");
      key.set(options, raw.text, 0);
      return Status::OK();
    case KeyType::kEnum: {
      if (!is_text) return Invalid(key, raw.text, key.allowed);
      std::string_view allowed = key.allowed;
      while (!allowed.empty()) {
        auto bar = allowed.find('|');
        if (allowed.substr(0, bar) == raw.text) {
          key.set(options, raw.text, 0);
          return Status::OK();
        }
        if (bar == std::string_view::npos) break;
        allowed.remove_prefix(bar + 1);
      }
      return Invalid(key, "\"" + raw.text + "\"", key.allowed);
    }
    case KeyType::kListen: {
      if (!is_text) return Invalid(key, raw.text, TypeName(key.type));
      if (raw.text.empty()) {  // disabled listener
        key.set(options, raw.text, 0);
        return Status::OK();
      }
      std::string host;
      unsigned short port = 0;
      Status st = ParseListenAddress(raw.text, &host, &port);
      if (!st.ok())
        return Invalid(key, "\"" + raw.text + "\"",
                       "\"host:port\" with port 0..65535, or \"\" to disable");
      key.set(options, raw.text, 0);
      return Status::OK();
    }
    case KeyType::kUnsigned: {
      std::int64_t v = raw.integer;
      if (raw.kind == RawValue::Kind::kString) {
        // Only command-line text arrives here as a string; TOML strings for integers are wrong.
        return Invalid(key, "\"" + raw.text + "\"", RangeText(key));
      }
      if (raw.kind != RawValue::Kind::kInteger) return Invalid(key, raw.text, RangeText(key));
      if (v < 0 || static_cast<std::uint64_t>(v) < key.min ||
          static_cast<std::uint64_t>(v) > key.max) {
        return Invalid(key, raw.text, RangeText(key));
      }
      key.set(options, raw.text, static_cast<std::uint64_t>(v));
      return Status::OK();
    }
    case KeyType::kDuration: {
      std::int64_t seconds = 0;
      if (raw.kind == RawValue::Kind::kInteger) {
        seconds = raw.integer;
      } else if (!is_text || !ParseDurationSeconds(raw.text, &seconds).ok()) {
        return Invalid(key, raw.text, TypeName(key.type));
      }
      if (seconds < 0 || static_cast<std::uint64_t>(seconds) > key.max) {
        return Invalid(key, raw.text,
                       "a duration between 0 (unlimited) and " + std::to_string(key.max) + "s");
      }
      key.set(options, raw.text, static_cast<std::uint64_t>(seconds));
      return Status::OK();
    }
    case KeyType::kBool:
      // A TOML boolean, or the text true/false of a --set override.
      if ((raw.kind == RawValue::Kind::kBool || is_text) &&
          (raw.text == "true" || raw.text == "false")) {
        key.set(options, raw.text, raw.text == "true" ? 1 : 0);
        return Status::OK();
      }
      return Invalid(key, raw.text, TypeName(key.type));
  }
  return Status::OK();
}

const KeyDef* FindKey(std::string_view name) {
  for (const KeyDef& key : Keys()) {
    if (name == key.name) return &key;
  }
  return nullptr;
}

Status UnknownKey(std::string_view name, std::string_view origin) {
  std::string msg = "unknown config key '" + std::string(name) + "'";
  if (!origin.empty()) msg += " in " + std::string(origin);
  msg += "; known keys: ";
  bool first = true;
  for (const KeyDef& key : Keys()) {
    if (!first) msg += ", ";
    msg += key.name;
    first = false;
  }
  return Status::InvalidArgument(msg);
}

// A secret kept in its own file (mode 0600, outside the config): the whole file, without the
// trailing line break editors add. Messages name the file, never its contents.
Status ReadSecretFile(std::string_view key, const std::string& path, std::string* secret) {
  constexpr std::size_t kMaxSecretBytes = 4096;
  const std::string where = "config key '" + std::string(key) + "': secret file '" + path + "'";
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::IOError(where + " cannot be opened: " + std::strerror(errno));
  std::string text;
  char buf[1024];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() <= kMaxSecretBytes) {
    text.append(buf, n);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::IOError(where + " cannot be read");
  if (text.size() > kMaxSecretBytes) {
    return Status::InvalidArgument(where + " is larger than " + std::to_string(kMaxSecretBytes) +
                                   " bytes; it should hold only the secret");
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return Status::InvalidArgument(where + " is empty");
  if (text.find_first_of("\r\n") != std::string::npos) {
    return Status::InvalidArgument(where + " holds more than one line");
  }
  *secret = std::move(text);
  return Status::OK();
}

// A secret given inline (`inline_key`) or in a file (`file_key`), not both.
Status ResolveSecret(std::string_view inline_key, std::string_view file_key,
                     const std::string& file, std::string* secret) {
  if (file.empty()) return Status::OK();
  if (!secret->empty()) {
    return Status::InvalidArgument("config keys '" + std::string(inline_key) + "' and '" +
                                   std::string(file_key) + "' are both set; set one");
  }
  return ReadSecretFile(file_key, file, secret);
}

Status CheckTls(std::string_view section, const TlsOptions& tls) {
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    std::string msg = "config keys '";
    msg.append(section).append(".tls_cert_file' and '").append(section);
    msg.append(".tls_key_file' go together: set both to serve TLS, or neither");
    return Status::InvalidArgument(msg);
  }
  return Status::OK();
}

// A [cluster] section is all or nothing: its identity keys are required together, and names
// become NATS stream, subject and key names, so their characters are limited.
Status CheckCluster(Options* options) {
  ClusterOptions& c = options->cluster;
  const bool any = !c.name.empty() || !c.node_id.empty() || !c.nats_urls.empty();
  if (!any) return Status::OK();
  if (c.name.empty() || c.node_id.empty() || c.nats_urls.empty()) {
    return Status::InvalidArgument(
        "config keys 'cluster.name', 'cluster.node_id' and 'cluster.nats_urls' go together: set "
        "all three to run as a cluster node, or none for a single node");
  }
  auto valid = [](std::string_view text, bool upper) {
    if (text.empty() || text.size() > 32) return false;
    for (char ch : text) {
      const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                      ch == '-' || (upper && ch >= 'A' && ch <= 'Z');
      if (!ok) return false;
    }
    return true;
  };
  if (!valid(c.name, true)) {
    return Status::InvalidArgument("config key 'cluster.name': \"" + c.name +
                                   "\" must be 1 to 32 of A-Z a-z 0-9 _ -");
  }
  if (!valid(c.node_id, false)) {
    return Status::InvalidArgument("config key 'cluster.node_id': \"" + c.node_id +
                                   "\" must be 1 to 32 of a-z 0-9 _ -");
  }
  if (c.stream_replicas != 1 && c.stream_replicas != 3 && c.stream_replicas != 5) {
    return Status::InvalidArgument(
        "config key 'cluster.stream_replicas': JetStream replicates a stream on 1, 3 or 5 "
        "servers, not " + std::to_string(c.stream_replicas));
  }
  if (c.lease_ttl_ms < 2 * c.lease_renew_ms) {
    return Status::InvalidArgument(
        "config key 'cluster.lease_ttl_ms' must be at least twice 'cluster.lease_renew_ms' (" +
        std::to_string(c.lease_renew_ms) + "), or one late renewal marks a live node down");
  }
  return Status::OK();
}

}  // namespace

Status FinishOptions(Options* options) {
  AuthOptions& auth = options->auth;
  INGOT_RETURN_IF_ERROR(
      ResolveSecret("auth.token", "auth.token_file", auth.token_file, &auth.token));
  INGOT_RETURN_IF_ERROR(
      ResolveSecret("auth.password", "auth.password_file", auth.password_file, &auth.password));
  if (auth.username.empty() != auth.password.empty()) {
    return Status::InvalidArgument(
        "config keys 'auth.username' and 'auth.password' (or 'auth.password_file') go together: "
        "set both for basic authentication, or neither");
  }
  if (auth.username.find(':') != std::string::npos) {
    return Status::InvalidArgument(
        "config key 'auth.username': a user name cannot contain ':' (basic authentication "
        "separates user and password with it)");
  }
  INGOT_RETURN_IF_ERROR(CheckTls("ingest", options->ingest.tls));
  INGOT_RETURN_IF_ERROR(CheckTls("query", options->query.tls));
  return CheckCluster(options);
}

Status ParseListenAddress(std::string_view text, std::string* host, unsigned short* port) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument("listen address '" + std::string(text) + "' is not host:port");
  }
  std::string_view port_text = text.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port_text.empty() ||
      value > 65535) {
    return Status::InvalidArgument("listen address '" + std::string(text) +
                                   "': port must be 0..65535");
  }
  std::string_view h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  *host = std::string(h);
  *port = static_cast<unsigned short>(value);
  return Status::OK();
}

Status ParseDurationSeconds(std::string_view text, std::int64_t* seconds) {
  if (text.empty()) return Status::InvalidArgument("empty duration");
  std::int64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || number < 0) {
    return Status::InvalidArgument("duration '" + std::string(text) +
                                   "' does not start with a number");
  }
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  std::int64_t mult_ms;
  if (unit.empty() || unit == "s")
    mult_ms = 1000;
  else if (unit == "ms")
    mult_ms = 1;
  else if (unit == "m")
    mult_ms = 60'000;
  else if (unit == "h")
    mult_ms = 3'600'000;
  else if (unit == "d")
    mult_ms = 86'400'000;
  else if (unit == "w")
    mult_ms = 7 * 86'400'000LL;
  else if (unit == "y")
    mult_ms = 365 * 86'400'000LL;
  else
    return Status::InvalidArgument("duration '" + std::string(text) + "': unknown unit '" +
                                   std::string(unit) + "' (ms, s, m, h, d, w, y)");
  if (number > std::numeric_limits<std::int64_t>::max() / mult_ms) {
    return Status::InvalidArgument("duration '" + std::string(text) + "' is too large");
  }
  *seconds = number * mult_ms / 1000;
  return Status::OK();
}

Status ApplyToml(std::string_view text, std::string_view origin, Options* options) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << origin << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
        << e.description();
    return Status::InvalidArgument(msg.str());
  }
  for (auto&& [section_key, section_node] : root) {
    const toml::table* section = section_node.as_table();
    if (section == nullptr) {
      return UnknownKey(section_key.str(), origin);
    }
    for (auto&& [key, node] : *section) {
      std::string name = std::string(section_key.str()) + "." + std::string(key.str());
      const KeyDef* def = FindKey(name);
      if (def == nullptr) return UnknownKey(name, origin);
      RawValue raw{RawValue::Kind::kOther, {}, 0};
      if (auto s = node.value<std::string>(); s && node.is_string()) {
        raw.kind = RawValue::Kind::kString;
        raw.text = *s;
      } else if (node.is_integer()) {
        raw.kind = RawValue::Kind::kInteger;
        raw.integer = *node.value<std::int64_t>();
        raw.text = std::to_string(raw.integer);
      } else {
        std::ostringstream os;
        node.visit([&os](auto&& v) {
          if constexpr (toml::is_value<decltype(v)>)
            os << v;
          else
            os << "a table or array";
        });
        raw.kind = node.is_boolean()          ? RawValue::Kind::kBool
                   : node.is_floating_point() ? RawValue::Kind::kFloat
                                              : RawValue::Kind::kOther;
        raw.text = os.str();
      }
      INGOT_RETURN_IF_ERROR(ApplyValue(*def, raw, options).WithContext(origin));
    }
  }
  return Status::OK();
}

Status ApplyOverride(std::string_view assignment, Options* options) {
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    return Status::InvalidArgument("--set '" + std::string(assignment) +
                                   "' is not of the form section.key=value");
  }
  std::string_view name = assignment.substr(0, eq);
  std::string value(assignment.substr(eq + 1));
  const KeyDef* def = FindKey(name);
  if (def == nullptr) return UnknownKey(name, "--set");
  RawValue raw{RawValue::Kind::kString, value, 0};
  if (def->type == KeyType::kUnsigned) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec == std::errc() && end == value.data() + value.size() && !value.empty()) {
      raw.kind = RawValue::Kind::kInteger;
      raw.integer = v;
    }
  }
  return ApplyValue(*def, raw, options).WithContext("--set");
}

Status LoadOptions(const std::string& path, const std::vector<std::string>& overrides,
                   Options* options) {
  if (!path.empty()) {
    toml::table unused;
    std::string text;
    {
      FILE* f = std::fopen(path.c_str(), "rb");
      if (f == nullptr) return Status::IOError("cannot open config file '" + path + "'");
      char buf[8192];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
      std::fclose(f);
    }
    INGOT_RETURN_IF_ERROR(ApplyToml(text, path, options));
  }
  for (const std::string& assignment : overrides) {
    INGOT_RETURN_IF_ERROR(ApplyOverride(assignment, options));
  }
  return FinishOptions(options);
}

void ForEachConfigValue(
    const Options& options,
    const std::function<void(std::string_view key, const std::string& json)>& fn) {
  for (const KeyDef& key : Keys()) {
    const std::string_view name = key.name;
    if (name == "auth.token" || name == "auth.password") {
      fn(std::string(name) + "_set", key.get(options) == "\"\"" ? "false" : "true");
      continue;
    }
    fn(name, key.get(options));
  }
}

}  // namespace ingot
