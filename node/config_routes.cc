#include "node/config_routes.h"

#include <memory>

#include <nlohmann/json.hpp>

#include "config/config_loader.h"

namespace ingot {

std::string EffectiveConfigJson(const Options& o) {
  // Sections and keys as conf/ingot.toml names them, from the config loader's own table of keys
  // (so a new key shows up here without a second list to keep in step).
  nlohmann::ordered_json data = nlohmann::ordered_json::object();
  ForEachConfigValue(o, [&](std::string_view key, const std::string& json) {
    const std::size_t dot = key.find('.');
    data[std::string(key.substr(0, dot))][std::string(key.substr(dot + 1))] =
        nlohmann::ordered_json::parse(json);
  });
  // Worked out at start from the descriptor limit, not set by a key.
  data["storage"]["max_open_files"] = o.storage.max_open_files;
  return data.dump();
}

void RegisterConfigRoutes(HttpRouter& router, const Options& options) {
  auto body = std::make_shared<const std::string>(
      "{\"status\":\"success\",\"data\":" + EffectiveConfigJson(options) + "}\n");
  router.Add(
      http::verb::get, "/api/v1/ingot/config",
      [body](const HttpRequest&, HttpReply& reply) {
        SetReply(reply, http::status::ok, "application/json", std::string(*body));
      },
      HttpWork::kInline);
}

}  // namespace ingot
