// See reply_limits.h.
#include "reply_limits.h"

#include <heartwheel/ws/frame.h>

#include "client.h"
#include "worker.h"

namespace chat {

std::size_t publication_json_bytes(const heartwheel::pubsub::Publication& p) noexcept {
  // Field names and punctuation (63 bytes with "info"), 20 digits of offset.
  return p.channel.size() + p.epoch.size() + p.data.size() + p.info.size() + 64 + 20;
}

std::size_t newest_that_fit(const std::vector<heartwheel::pubsub::PublicationPtr>& list,
                            std::size_t budget) noexcept {
  std::size_t used = 0, n = 0;
  for (auto it = list.rbegin(); it != list.rend(); ++it, ++n) {
    used += publication_json_bytes(**it);
    if (used > budget) break;
  }
  return n;
}

std::size_t publications_json_bytes(
    const std::vector<heartwheel::pubsub::PublicationPtr>& list) noexcept {
  std::size_t total = 0;
  for (const auto& p : list) total += publication_json_bytes(*p);
  return total;
}

std::size_t members_that_fit(const std::vector<std::string>& members, std::size_t budget) noexcept {
  std::size_t used = 0, n = 0;
  for (; n < members.size(); ++n) {
    used += members[n].size() + 1;
    if (used > budget) break;
  }
  return n;
}


// ---- the worker's side -----------------------------------------------------

// A reply is a frame like a publication: when this peer already has bytes
// queued and the reply would take it past --max-queued-bytes, the
// slow-consumer policy decides (ws::Connection::deliver). Under `close` the
// connection goes (reason slow_consumer); under `skip` a reply cannot just be
// left out (the client waits for it), so the connection is closed with 1008
// instead: either way a client that does not read cannot make the server
// queue replies without bound.
void Worker::send_reply(Client& client, const Response& response) {
  namespace ws = heartwheel::ws;
  if (!response.text.empty()) {
    const ws::Delivery d = client.ws().deliver(ws::encode_shared(ws::Opcode::text, response.text));
    if (d == ws::Delivery::closed) {
      ++stats_.limits["reply_slow_consumer"];
    } else if (d == ws::Delivery::skipped) {
      ++stats_.limits["reply_slow_consumer"];
      (void)client.ws().close(1008, "replies not read");
    }
  }
  // A reply that ends the connection (a refused token, a bad command).
  if (response.close_code != 0) (void)client.ws().close(response.close_code, response.close_reason);
}

std::size_t Worker::reply_budget() const noexcept {
  return config_.max_reply_bytes > kReplyEnvelopeBytes
             ? config_.max_reply_bytes - kReplyEnvelopeBytes
             : 0;
}

}  // namespace chat
