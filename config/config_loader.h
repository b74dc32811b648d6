// Loading and validating Options from a TOML file and `key=value` overrides.
//
// Every key is declared once in a table (config_loader.cc) with its type and allowed range, so the
// file and the command line are validated by the same code. An unknown key, a wrong type or an
// out-of-range value is an InvalidArgument naming the key, the value and what is allowed.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config/options.h"
#include "config/status.h"

namespace ingot {

// Applies the TOML file at `path` (skipped when empty) and then each "section.key=value" override,
// in order, on top of `*options`; then FinishOptions.
Status LoadOptions(const std::string& path, const std::vector<std::string>& overrides,
                   Options* options);

// Completes options once every key is applied (LoadOptions calls it last): reads the secret files
// (`auth.token_file`, `auth.password_file`) into `auth.token` / `auth.password` and checks the
// settings that go together (a TLS certificate and its key, a user name and its password).
Status FinishOptions(Options* options);

// Applies the TOML document `text` (the file's contents); `origin` names it in messages.
Status ApplyToml(std::string_view text, std::string_view origin, Options* options);

// Applies one "section.key=value" override.
Status ApplyOverride(std::string_view assignment, Options* options);

// Parses "30d", "12h", "15m", "45s", "500ms" or a plain number of seconds into seconds (ms are
// rounded down). Used for durations given as text.
Status ParseDurationSeconds(std::string_view text, std::int64_t* seconds);

// Every config key with its value in `options`, in the order of conf/ingot.toml: `json` is the
// value as JSON text (a quoted string, a number, true or false; durations as "<seconds>s"). The
// secrets auth.token and auth.password are never shown: they come as auth.token_set and
// auth.password_set, true or false.
void ForEachConfigValue(
    const Options& options,
    const std::function<void(std::string_view key, const std::string& json)>& fn);

// Parses "host:port" with port 0..65535.
Status ParseListenAddress(std::string_view text, std::string* host, unsigned short* port);

}  // namespace ingot
