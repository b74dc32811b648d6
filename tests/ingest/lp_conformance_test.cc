// Conformance of LineParser with InfluxData's line-protocol corpus (see
// ../shared/lp-corpus/README.md). Every *.jsonl file in $INGOT_LP_CORPUS_DIR (default: the
// shared corpus next to the repository) is read:
//  - decode records: the input is split with NextLine and parsed entry by entry, as the server
//    does; ok records must yield exactly the expected points, error records must yield good
//    entries before `error_point` and reject that entry;
//  - encode records: the expected line-protocol text must decode to the point, and the point
//    written with AppendEscaped must decode to it too.
#include <gtest/gtest.h>

#include <charconv>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ingest/line_parser.h"
#include "ingest/line_protocol_escape.h"

namespace ingot::ingest {
namespace {

using nlohmann::json;

std::string Base64Decode(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (const char c : in) {
    const int v = val(c);
    if (v < 0) continue;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// A decoded point in plain values, comparable with the corpus' expectation.
struct PlainField {
  std::string type;
  double f = 0;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  bool b = false;
  std::string s;
};

struct PlainPoint {
  std::string measurement;
  std::map<std::string, std::string> tags;
  std::map<std::string, PlainField> fields;
  std::int64_t time = 0;
};

PlainPoint FromParsed(const ParsedLine& line) {
  PlainPoint p;
  AppendUnescaped(line.measurement, EscapeContext::kMeasurement, &p.measurement);
  for (const Tag& t : line.tags) {
    std::string k, v;
    AppendUnescaped(t.key, EscapeContext::kTagKey, &k);
    AppendUnescaped(t.value, EscapeContext::kTagValue, &v);
    p.tags[k] = v;
  }
  for (const Field& f : line.fields) {
    std::string k;
    AppendUnescaped(f.key, EscapeContext::kFieldKey, &k);
    PlainField pf;
    pf.type = std::string(FieldTypeName(f.type));
    switch (f.type) {
      case FieldType::kFloat:
        pf.f = f.float_value;
        break;
      case FieldType::kInt:
        pf.i = f.int_value;
        break;
      case FieldType::kUint:
        pf.u = f.uint_value;
        break;
      case FieldType::kBool:
        pf.b = f.bool_value;
        break;
      case FieldType::kString:
        AppendUnescaped(f.text, EscapeContext::kStringValue, &pf.s);
        break;
    }
    p.fields[k] = pf;  // a repeated key keeps the last value, as InfluxDB does
  }
  p.time = line.ts_ns;
  return p;
}

PlainField FieldFromJson(const json& j) {
  PlainField f;
  f.type = j.at("type").get<std::string>();
  const json& v = j.at("value");
  if (f.type == "float") {
    f.f = v.get<double>();
  } else if (f.type == "int") {
    f.i = v.get<std::int64_t>();
  } else if (f.type == "uint") {
    f.u = v.get<std::uint64_t>();
  } else if (f.type == "bool") {
    f.b = v.get<bool>();
  } else {
    f.s = v.get<std::string>();
  }
  return f;
}

// Decode records keep tags and fields as objects, encode records as [key, value] pairs.
PlainPoint PointFromJson(const json& j) {
  PlainPoint p;
  p.measurement = j.at("measurement").get<std::string>();
  const json& tags = j.at("tags");
  if (tags.is_object()) {
    for (auto it = tags.begin(); it != tags.end(); ++it) p.tags[it.key()] = it.value().get<std::string>();
  } else {
    for (const json& kv : tags) p.tags[kv.at(0).get<std::string>()] = kv.at(1).get<std::string>();
  }
  const json& fields = j.at("fields");
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) p.fields[it.key()] = FieldFromJson(it.value());
  } else {
    for (const json& kv : fields) p.fields[kv.at(0).get<std::string>()] = FieldFromJson(kv.at(1));
  }
  p.time = j.at("time").get<std::int64_t>();
  return p;
}

// Empty when equal, else what differs. Floats compare with ==: the corpus' JSON writes -0 as 0
// ("u e=-0e-4"), while the parser keeps the sign, as Go's ParseFloat does.
std::string Compare(const PlainPoint& got, const PlainPoint& want) {
  std::ostringstream os;
  if (got.measurement != want.measurement) {
    os << "measurement '" << got.measurement << "' != '" << want.measurement << "'; ";
  }
  if (got.tags != want.tags) os << "tags differ (" << got.tags.size() << " vs " << want.tags.size() << "); ";
  if (got.fields.size() != want.fields.size()) {
    os << "field count " << got.fields.size() << " != " << want.fields.size() << "; ";
  }
  for (const auto& [key, w] : want.fields) {
    const auto it = got.fields.find(key);
    if (it == got.fields.end()) {
      os << "missing field '" << key << "'; ";
      continue;
    }
    const PlainField& g = it->second;
    if (g.type != w.type) {
      os << "field '" << key << "' type " << g.type << " != " << w.type << "; ";
    } else if ((w.type == "float" && !(g.f == w.f)) ||
               (w.type == "int" && g.i != w.i) || (w.type == "uint" && g.u != w.u) ||
               (w.type == "bool" && g.b != w.b) || (w.type == "string" && g.s != w.s)) {
      os << "field '" << key << "' value differs; ";
    }
  }
  if (got.time != want.time) os << "time " << got.time << " != " << want.time << "; ";
  return os.str();
}

std::string CaseName(const json& r) {
  std::string s = r.value("id", std::string("?"));
  if (r.contains("disputed")) s += " (disputed)";
  return s;
}

struct Tally {
  int decode_ok = 0;
  int decode_error = 0;
  int encode = 0;
  int encode_refused = 0;
  int disputed = 0;
  std::vector<std::string> failures;
};

void RunDecodeRecord(const json& r, Tally* tally) {
  const std::string input = r.contains("input") ? r.at("input").get<std::string>()
                                                : Base64Decode(r.at("input_b64").get<std::string>());
  Precision precision;
  ASSERT_TRUE(ParsePrecision(r.at("precision").get<std::string>(), &precision));
  const std::int64_t default_time = r.at("default_time").get<std::int64_t>();
  const bool ok = r.at("ok").get<bool>();
  const std::size_t error_point = ok ? SIZE_MAX : r.at("error_point").get<std::size_t>();
  std::vector<PlainPoint> want;
  if (ok) {
    for (const json& p : r.at("points")) want.push_back(PointFromJson(p));
  }
  if (r.contains("disputed")) ++tally->disputed;
  (ok ? tally->decode_ok : tally->decode_error) += 1;

  LineParser parser(precision);
  std::size_t pos = 0;
  std::string_view line;
  std::size_t entry = 0;
  while (NextLine(input, &pos, &line, /*end_of_input=*/true)) {
    ParsedLine parsed;
    ParseError error;
    const ParseResult result = parser.Parse(line, default_time, &parsed, &error);
    if (result == ParseResult::kSkip) continue;
    if (entry == error_point) {
      if (result != ParseResult::kError) {
        tally->failures.push_back(CaseName(r) + ": entry " + std::to_string(entry) +
                                  " accepted, the reference rejects it (" +
                                  r.at("error").get<std::string>() + ")");
      }
      return;
    }
    if (result == ParseResult::kError) {
      tally->failures.push_back(CaseName(r) + ": entry " + std::to_string(entry) +
                                " rejected: " + error.Describe(line));
      return;
    }
    if (ok) {
      if (entry >= want.size()) {
        tally->failures.push_back(CaseName(r) + ": more points than expected");
        return;
      }
      const std::string diff = Compare(FromParsed(parsed), want[entry]);
      if (!diff.empty()) {
        tally->failures.push_back(CaseName(r) + ": point " + std::to_string(entry) + ": " + diff);
        return;
      }
    }
    ++entry;
  }
  if (!ok) {
    tally->failures.push_back(CaseName(r) + ": input ended after " + std::to_string(entry) +
                              " entries, expected a rejection at entry " +
                              std::to_string(error_point));
  } else if (entry != want.size()) {
    tally->failures.push_back(CaseName(r) + ": " + std::to_string(entry) + " points, expected " +
                              std::to_string(want.size()));
  }
}

// Writes `p` as line protocol with AppendEscaped (floats in shortest round-trip form).
std::string WriteLine(const json& point) {
  std::string s;
  AppendEscaped(point.at("measurement").get<std::string>(), EscapeContext::kMeasurement, &s);
  for (const json& kv : point.at("tags")) {
    s += ',';
    AppendEscaped(kv.at(0).get<std::string>(), EscapeContext::kTagKey, &s);
    s += '=';
    AppendEscaped(kv.at(1).get<std::string>(), EscapeContext::kTagValue, &s);
  }
  char sep = ' ';
  for (const json& kv : point.at("fields")) {
    s += sep;
    sep = ',';
    AppendEscaped(kv.at(0).get<std::string>(), EscapeContext::kFieldKey, &s);
    s += '=';
    const PlainField f = FieldFromJson(kv.at(1));
    char buf[64];
    if (f.type == "float") {
      s.append(buf, static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, f.f).ptr - buf));
    } else if (f.type == "int") {
      s += std::to_string(f.i) + "i";
    } else if (f.type == "uint") {
      s += std::to_string(f.u) + "u";
    } else if (f.type == "bool") {
      s += f.b ? "true" : "false";
    } else {
      s += '"';
      AppendEscaped(f.s, EscapeContext::kStringValue, &s);
      s += '"';
    }
  }
  s += ' ';
  s += std::to_string(point.at("time").get<std::int64_t>());
  return s;
}

void RunEncodeRecord(const json& r, Tally* tally) {
  Precision precision;
  ASSERT_TRUE(ParsePrecision(r.at("precision").get<std::string>(), &precision));
  LineParser parser(precision);
  const json& point = r.at("point");
  const std::string written = WriteLine(point);
  ParsedLine parsed;
  ParseError error;
  if (!r.at("ok").get<bool>()) {
    // The reference refuses to write this point; what it would have written must not parse.
    ++tally->encode_refused;
    if (parser.Parse(written, 0, &parsed, &error) != ParseResult::kError) {
      tally->failures.push_back(CaseName(r) + ": unwritable point parsed: " + written);
    }
    return;
  }
  ++tally->encode;
  const PlainPoint want = PointFromJson(point);
  for (const std::string& text : {r.at("output").get<std::string>(), written}) {
    std::size_t pos = 0;
    std::string_view line;
    if (!NextLine(text, &pos, &line, true) || pos != text.size()) {
      tally->failures.push_back(CaseName(r) + ": not one entry: " + text);
      continue;
    }
    if (parser.Parse(line, 0, &parsed, &error) != ParseResult::kPoint) {
      tally->failures.push_back(CaseName(r) + ": rejected " + error.Describe(line));
      continue;
    }
    const std::string diff = Compare(FromParsed(parsed), want);
    if (!diff.empty()) tally->failures.push_back(CaseName(r) + ": " + diff + " in " + text);
  }
}

std::filesystem::path CorpusDir() {
  if (const char* env = std::getenv("INGOT_LP_CORPUS_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return INGOT_LP_CORPUS_DEFAULT_DIR;
}

TEST(LpConformanceTest, AgreesWithReferenceCorpus) {
  const std::filesystem::path dir = CorpusDir();
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no corpus at " << dir;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".jsonl") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) GTEST_SKIP() << "no *.jsonl in " << dir;

  Tally tally;
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string text;
    int line_no = 0;
    while (std::getline(in, text)) {
      ++line_no;
      if (text.empty()) continue;
      const json r = json::parse(text);
      SCOPED_TRACE(file.filename().string() + ":" + std::to_string(line_no));
      if (r.contains("point")) {
        RunEncodeRecord(r, &tally);
      } else {
        RunDecodeRecord(r, &tally);
      }
    }
  }
  std::cout << "corpus: " << tally.decode_ok << " decode ok, " << tally.decode_error
            << " decode error, " << tally.encode << " encode, " << tally.encode_refused
            << " encode refused, " << tally.disputed << " disputed; "
            << tally.failures.size() << " disagreements\n";
  for (std::size_t i = 0; i < tally.failures.size() && i < 30; ++i) {
    ADD_FAILURE() << tally.failures[i];
  }
  EXPECT_TRUE(tally.failures.empty());
  EXPECT_GT(tally.decode_ok + tally.decode_error + tally.encode, 0);
}

}  // namespace
}  // namespace ingot::ingest
