#include "node/cluster_routes.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "cluster/select_wire.h"
#include "query/series_fanout.h"

namespace ingot {
namespace {

constexpr std::string_view kTextType = "text/plain; charset=utf-8";

void Select(Storage& storage, const QueryOptions& options, const HttpRequest& request,
            HttpReply& reply) {
  const auto received = std::chrono::steady_clock::now();
  cluster::SelectRequest select;
  Status st = cluster::DecodeSelectRequest(request.body(), &select);
  if (!st.ok()) {
    SetReply(reply, http::status::bad_request, kTextType, st.ToString() + "\n");
    return;
  }
  // The coordinator's time left for the query, and never longer than a query may run here.
  std::uint32_t timeout_ms = options.timeout_ms;
  if (select.timeout_ms != 0) timeout_ms = std::min(timeout_ms, select.timeout_ms);
  promql::SelectContext context;
  context.deadline = received + std::chrono::milliseconds(timeout_ms);
  std::vector<CorruptChunk> damage;
  if (select.skip_damage) context.damage = &damage;
  std::vector<promql::FetchedSeries> series;
  st = promql::SelectLocal(
      storage, select.selector, select.lo_ns, select.hi_ns,
      static_cast<std::size_t>(std::min<std::uint64_t>(select.max_series, options.max_series)),
      &series, /*with_points=*/!select.labels_only, context);
  if (!st.ok()) {
    // Busy is the series limit or the deadline: the coordinator passes its message on as the
    // query's error.
    SetReply(reply,
             st.IsBusy() ? http::status::unprocessable_entity : http::status::internal_server_error,
             kTextType, std::string(st.IsBusy() ? st.message() : st.ToString()) + "\n");
    return;
  }
  std::string body;
  cluster::EncodeSelectResponse(series, damage, &body);
  SetReply(reply, http::status::ok, cluster::kSelectContentType, std::move(body));
}

}  // namespace

void RegisterClusterSelectRoute(HttpRouter& router, Storage& storage, const QueryOptions& options) {
  router.Add(
      http::verb::post, std::string(cluster::kSelectPath),
      [&storage, options](const HttpRequest& request, HttpReply& reply) {
        Select(storage, options, request, reply);
      },
      HttpWork::kQuery);
}

}  // namespace ingot
