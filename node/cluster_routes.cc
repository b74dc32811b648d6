#include "node/cluster_routes.h"

#include <algorithm>
#include <string>
#include <vector>

#include "cluster/select_wire.h"
#include "query/series_fanout.h"

namespace ingot {
namespace {

constexpr std::string_view kTextType = "text/plain; charset=utf-8";

void Select(Storage& storage, std::size_t max_series, const HttpRequest& request,
            HttpReply& reply) {
  cluster::SelectRequest select;
  Status st = cluster::DecodeSelectRequest(request.body(), &select);
  if (!st.ok()) {
    SetReply(reply, http::status::bad_request, kTextType, st.ToString() + "\n");
    return;
  }
  std::vector<promql::FetchedSeries> series;
  st = promql::SelectLocal(
      storage, select.selector, select.lo_ns, select.hi_ns,
      static_cast<std::size_t>(std::min<std::uint64_t>(select.max_series, max_series)), &series,
      /*with_points=*/!select.labels_only);
  if (!st.ok()) {
    // Busy is the series limit: the coordinator passes its message on as the query's error.
    SetReply(reply,
             st.IsBusy() ? http::status::unprocessable_entity : http::status::internal_server_error,
             kTextType, std::string(st.IsBusy() ? st.message() : st.ToString()) + "\n");
    return;
  }
  std::string body;
  cluster::EncodeSelectResponse(series, &body);
  SetReply(reply, http::status::ok, cluster::kSelectContentType, std::move(body));
}

}  // namespace

void RegisterClusterSelectRoute(HttpRouter& router, Storage& storage, const QueryOptions& options) {
  const std::size_t max_series = options.max_series;
  router.Add(
      http::verb::post, std::string(cluster::kSelectPath),
      [&storage, max_series](const HttpRequest& request, HttpReply& reply) {
        Select(storage, max_series, request, reply);
      },
      HttpWork::kQuery);
}

}  // namespace ingot
