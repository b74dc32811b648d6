// The bodies of `POST /internal/cluster/select`, the request a coordinator sends every peer for
// one selector of a query (cluster/fanout.h) and the peer's answer (node/cluster_routes.h).
// All integers little-endian; strings are a u32 byte length and the bytes (no terminator).
//
//   request   "ISEQ" (4 bytes), u8 version (kSelectWireVersion)
//             i64 lo_ns, i64 hi_ns          the range of points wanted, both ends included
//             u64 max_series                Busy past this many matched series
//             u32 timeout_ms                the query's time left when it was sent (0: none);
//                                           the peer's selection stops with Busy past it
//             u8 flags                      kSelectLabelsOnly: series without their points
//                                           kSelectSkipDamage: leave damaged chunks out and
//                                             list them in the response
//             u32 matcher count (>= 1), then per matcher:
//               u8 op (SelectWireOp), string name, string value
//
//   response  "ISER" (4 bytes), u8 version (kSelectWireVersion)
//             u64 series count, then per series (ascending by labels, label sets unique):
//               u32 label count, then per label (ascending by name, names unique):
//                 string name, string value
//               u64 point count n (0 for a labels-only request)
//               n x i64 timestamps (ns, strictly ascending)
//               n x u64 values (the float64's bits, so NaN payloads such as Prometheus'
//                               staleness marker arrive unchanged)
//             u32 damaged count (0 unless the request had kSelectSkipDamage), then per damaged
//               chunk left out: i64 first_ts_ns, i64 last_ts_ns, string message (naming the
//               series, as SeriesReader reports it)
//
// Version 2 added timeout_ms, kSelectSkipDamage and the damaged list; nodes speak one version,
// and a request or response of another is refused (so during a rolling upgrade a peer of the
// other version is left out of answers with a warning naming the versions).
//
// Decoders read only inside the given bytes: every count and length is checked against what is
// left before it is used (so a hostile count cannot make them allocate more than the input's
// size), and any byte left over is an error. Broken framing or order is Corruption; a well-formed
// request that cannot be served (another version, an unknown flag or operator, a regex RE2
// rejects, no matcher) is InvalidArgument. Matchers are rebuilt with MakeMatcher, so regexes
// are compiled by the receiver.
//
// Thread safety: free functions; reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/storage.h"
#include "config/status.h"
#include "query/selector.h"
#include "query/series_fanout.h"

namespace ingot::cluster {

inline constexpr char kSelectRequestMagic[4] = {'I', 'S', 'E', 'Q'};
inline constexpr char kSelectResponseMagic[4] = {'I', 'S', 'E', 'R'};
inline constexpr std::uint8_t kSelectWireVersion = 2;
inline constexpr std::string_view kSelectPath = "/internal/cluster/select";
inline constexpr std::string_view kSelectContentType = "application/octet-stream";

// Request flags.
inline constexpr std::uint8_t kSelectLabelsOnly = 1;  // SeriesFanout::SelectSeries
inline constexpr std::uint8_t kSelectSkipDamage = 2;  // SelectContext::damage set

// A matcher's operator on the wire.
// persisted: never renumber (nodes of different builds talk to each other)
enum class SelectWireOp : std::uint8_t {
  kEqual = 0,
  kNotEqual = 1,
  kRegexMatch = 2,
  kRegexNoMatch = 3,
};

// A request's fields besides its selector.
struct SelectParams {
  std::int64_t lo_ns = 0;
  std::int64_t hi_ns = 0;
  std::uint64_t max_series = 0;
  bool labels_only = false;
  std::uint32_t timeout_ms = 0;  // 0: no deadline
  bool skip_damage = false;
};

struct SelectRequest : SelectParams {
  Selector selector;
};

// Appends the request for `selector` to `*out`.
void EncodeSelectRequest(const Selector& selector, const SelectParams& params, std::string* out);
Status DecodeSelectRequest(std::string_view bytes, SelectRequest* out);

// Appends the answer holding `series` and the damaged chunks left out of them to `*out`.
// REQUIRES: `series` as SeriesFanout::Select returns it (sorted and unique by labels, each label
// set sorted by name, timestamps ascending and unique); the decoder refuses anything else. Of
// each damaged chunk its time range and status message are sent.
void EncodeSelectResponse(std::span<const promql::FetchedSeries> series,
                          std::span<const CorruptChunk> damage, std::string* out);
// Replaces `*out` with the decoded series and `*damage` with the damaged chunks (series id 0,
// the message as a Corruption status).
Status DecodeSelectResponse(std::string_view bytes, std::vector<promql::FetchedSeries>* out,
                            std::vector<CorruptChunk>* damage);

}  // namespace ingot::cluster
