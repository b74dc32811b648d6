// SeriesFanout: where the PromQL engine's selectors get their series when the data is spread over
// several nodes (cluster mode, docs/scale-out.md). Set in QueryParams::fanout, it answers each
// selector of a query with every matching series and its points over the range that selector
// reads, gathered from all nodes and merged by label set; the engine then evaluates as it does
// over local storage. cluster/fanout.h is the implementation that asks the peers.
//
// SelectLocal is the same answer from one node's own storage: what a node sends its peers, and
// the local part of the cluster's answer.
//
// Each selection runs under a SelectContext: the query's deadline (past it the selection stops
// with Busy, on every node) and, when damaged chunks are skipped (query.damaged_chunks =
// "skip"), where they are reported, the peers' as well as this node's.
//
// Thread safety: Select may run concurrently (several queries, one engine thread each).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chunk/storage.h"
#include "config/status.h"
#include "query/promql_engine.h"
#include "query/selector.h"

namespace ingot::promql {

// One series of a selection: its labels (sorted by name, `__name__` included) and its points in
// the asked range, timestamps ascending and unique. Integer and boolean series come as doubles;
// staleness markers are kept as they were stored (bit for bit).
struct FetchedSeries {
  Labels labels;
  std::vector<std::int64_t> ts;
  std::vector<double> values;
};

// What a selection runs under besides its range and series limit.
struct SelectContext {
  // The query's deadline (QueryParams::deadline): past it the selection fails with Busy.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Set: damaged chunks are left out of the answer and appended here (a peer's with its address
  // at the start of the status message), as SeriesReader::SkipDamage reports them; the caller
  // turns them into warnings. Null: damage fails the selection (a peer's fails its answer, which
  // is then left out with a warning). Not thread-safe: one selection at a time per sink.
  std::vector<CorruptChunk>* damage = nullptr;
};

class SeriesFanout {
 public:
  virtual ~SeriesFanout() = default;

  // Every series matching `selector` with its points in [lo_ns, hi_ns], over all nodes, merged
  // by label set (one series per label set, its points united), sorted by labels (Labels'
  // operator<: pair by pair, name then value, a prefix first, as the engine orders them).
  // Series without a point in the range are left out. Busy naming `max_series` when more match.
  // Problems that leave the answer incomplete (a node that did not answer) are appended to
  // `*warnings` and the rest of the answer is returned; damaged chunks as `context` says.
  virtual Status Select(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                        std::size_t max_series, const SelectContext& context,
                        std::vector<FetchedSeries>* out, std::vector<std::string>* warnings) = 0;

  // As Select, without the points (the series and label endpoints need only the label sets of
  // the series with a point in the range): `ts` and `values` of `*out` are empty. By default,
  // Select's answer with the points dropped; an implementation that moves points over a
  // network should not move them.
  virtual Status SelectSeries(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                              std::size_t max_series, const SelectContext& context,
                              std::vector<FetchedSeries>* out, std::vector<std::string>* warnings);
};

// SeriesFanout::Select over `storage` alone: series matched through SeriesCatalog (Busy past
// `max_series` matched, as the engine's selectors), read with a SeriesReader (a damaged chunk
// fails the selection with Corruption, the reader's default, unless `context.damage` is set),
// merged by label set and sorted; Busy once past `context.deadline` (checked between series).
// Without `with_points`, SelectSeries' answer: the same series, their points not kept.
// Thread-safe (a catalog and a reader of its own per call) but for the damage sink.
Status SelectLocal(Storage& storage, const Selector& selector, std::int64_t lo_ns,
                   std::int64_t hi_ns, std::size_t max_series, std::vector<FetchedSeries>* out,
                   bool with_points = true, const SelectContext& context = {});

// Unites `from`'s points into `into`'s (both ascending and unique, as FetchedSeries holds them);
// at a timestamp both have, `into`'s value stays. Returns how many such timestamps had values
// that differ (in their bits): replicas that disagree.
std::size_t UnitePoints(FetchedSeries* into, const FetchedSeries& from);

}  // namespace ingot::promql
