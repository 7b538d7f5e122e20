// See push_metrics.h.
#include "push_metrics.h"

#include <heartwheel/push/delayed_stats.h>

namespace pushsrv {

namespace metrics = heartwheel::metrics;

void write_metrics(metrics::TextWriter& out, const NodeStats& s) {
  // The queue's families come from its field table (lib/src/push/stats.cpp).
  heartwheel::push::write_metrics(out, s.delayed);
  out.family("heartwheel_push_api_publish_total", metrics::Type::counter,
             "POST /publish answers by result");
  out.sample(s.publish_accepted, {{"result", "accepted"}});
  out.sample(s.publish_refused, {{"result", "refused"}});
  out.sample(s.publish_unavailable, {{"result", "unavailable"}});
  out.sample(s.publish_capped, {{"result", "capped"}});
  out.counter("heartwheel_push_api_unauthorized_total",
              "POST and DELETE /publish answered 401 (no or wrong API key)",
              s.publish_unauthorized);
  out.counter("heartwheel_push_sse_refused_total",
              "GET /sse refused by the token or the channel rules (401, 403)", s.sse_refused);
  out.family("heartwheel_push_api_cancel_total", metrics::Type::counter,
             "DELETE /publish/{id} answers by result");
  out.sample(s.cancels_done, {{"result", "cancelled"}});
  out.sample(s.cancels_missed, {{"result", "not_found"}});
  out.counter("heartwheel_push_delivered_total", "pushes handed to the broker", s.delivered);
  out.counter("heartwheel_push_deliver_refused_total",
              "pushes the broker refused (left to the lease)", s.deliver_refused);
  out.counter("heartwheel_push_delivered_already_total",
              "deliveries the broker found published already (idempotent per push id)",
              s.delivered_already);
  out.gauge("heartwheel_push_sse_streams", "SSE streams open now", s.sse.current);
  out.counter("heartwheel_push_sse_opened_total", "SSE streams opened", s.sse.opened);
  out.counter("heartwheel_push_sse_events_total", "publications written to SSE streams",
              s.sse.events);
  out.counter("heartwheel_push_sse_token_expired_total",
              "SSE streams ended at their token's exp (close reason token_expired)",
              s.sse.token_expired);
  out.counter("heartwheel_push_sse_resets_total",
              "SSE resumes the history could not cover (a reset event)", s.sse.resets);
}

}  // namespace pushsrv
