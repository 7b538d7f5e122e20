// The control channel: how a server API call reaches the clients of every
// worker of every node (server_api.cpp), through the broker the workers
// already share: the in-process Bus on one node, Redis across nodes. Each
// worker's Control subscriber listens on kControlChannel (commands for
// clients, and surveys) and on its node's answers channel.
//
// - A command (disconnect, unsubscribe, subscribe, refresh a user's or a
//   client's connections) is one publication; every worker acts on its own
//   clients (a walk of its connections: O(connections), for administration).
// - A survey (info, channels, presence) is a publication that every worker
//   answers on the asking node's answers channel; the asker expects as many
//   answers as the control channel has subscribers (its presence: one per
//   worker with a hub, over every node) and merges what came within
//   kSurveyTimeout (a node that died meanwhile costs only that wait).
//
// Channels under "__hw:" are this program's: clients and the API may not
// use them.
#include "control.h"

#include <fnmatch.h>
#include <heartwheel/net/connection.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <unordered_set>

#include "client.h"
#include "worker.h"

namespace chat {

namespace pubsub = heartwheel::pubsub;
namespace ws = heartwheel::ws;

namespace {
constexpr std::string_view kControlChannel = "__hw:control";
constexpr heartwheel::Duration kSurveyTimeout = std::chrono::seconds(2);
// An answer is one publication: it must fit in --max-message-size.
constexpr std::size_t kAnswerSlack = 1024;

std::string answers_channel(const NodeInfo& node) { return "__hw:answers:" + node.uid; }
}  // namespace

bool reserved_channel(std::string_view channel) noexcept { return channel.starts_with("__hw:"); }

NodeInfo make_node_info() {
  NodeInfo n;
  std::random_device rd;
  char uid[17];
  std::snprintf(uid, sizeof uid, "%08x%08x", rd(), rd());
  n.uid = uid;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
  n.name = std::string(host) + ":" + std::to_string(getpid());
  return n;
}

void Worker::start_control(heartwheel::TimerService& timers) {
  timers_ = &timers;
  control_ = std::make_unique<Control>(*this);
  const auto ignore = [](pubsub::SubscribeResult) {};
  hub_->subscribe(*control_, kControlChannel, {}, ignore);
  hub_->subscribe(*control_, answers_channel(config_.node), {}, ignore);
}

void Worker::stop_control() noexcept {
  surveys_.clear();  // their answers never come now; their Responders answer nothing
  control_.reset();
}

void Worker::broadcast_control(Json command, std::function<void(std::error_code)> done) {
  hub_->publish(kControlChannel, command.dump(), {},
                [done = std::move(done)](pubsub::PublishResult r) {
                  if (done) done(r.error);
                });
}

void Worker::survey(Json question, std::function<void(std::vector<Json>)> done) {
  std::string id =
      config_.node.uid + "-" + std::to_string(index_) + "-" + std::to_string(++next_survey_);
  auto s = std::make_unique<Survey>(*this, id);
  s->done = std::move(done);
  Survey& survey = *s;
  surveys_.emplace(id, std::move(s));
  timers_->schedule(survey, kSurveyTimeout);
  question["survey"] = id;
  question["reply"] = answers_channel(config_.node);
  // How many answers: one per worker listening on the control channel, over
  // every node (the broker's presence count).
  hub_->presence(
      kControlChannel, [this, id, question = std::move(question)](pubsub::PresenceResult r) {
        const auto it = surveys_.find(id);
        if (it == surveys_.end()) return;  // timed out already
        it->second->expected = r.error || r.subscribers == 0 ? 1 : r.subscribers;
        hub_->publish(kControlChannel, question.dump(), {}, [this, id](pubsub::PublishResult p) {
          if (p.error) finish_survey(id);  // nobody will answer
        });
      });
}

void Worker::finish_survey(std::string id) {
  const auto it = surveys_.find(id);
  if (it == surveys_.end()) return;
  std::unique_ptr<Survey> s = std::move(it->second);
  surveys_.erase(it);
  if (s->done) s->done(std::move(s->answers));
}

void Worker::on_control(const pubsub::Publication& p) {
  Json m = Json::parse(p.data, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object()) return;
  if (p.channel != kControlChannel) {  // an answer to one of this node's surveys
    const auto it = surveys_.find(m.value("survey", std::string()));
    if (it == surveys_.end()) return;  // another worker's, or too late
    it->second->answers.push_back(std::move(m));
    if (it->second->answers.size() >= it->second->expected) finish_survey(it->first);
    return;
  }
  const std::string op = m.value("op", std::string());
  if (op == "survey") return answer_survey(m);
  act_on_clients(op, m);
}

std::string Worker::identity(const Client& c) const {
  if (identified()) return std::string(c.user());
  // Without tokens a client is its name (?name=), kept in its presence info.
  const Json info = Json::parse(c.info(), nullptr, /*allow_exceptions=*/false);
  return info.is_object() ? info.value("name", std::string()) : std::string();
}

void Worker::act_on_clients(const std::string& op, const Json& m) {
  const std::string user = m.value("user", std::string());
  const std::string client_id = m.value("client", std::string());
  const std::string channel = m.value("channel", std::string());
  std::unordered_set<std::string> spared;  // disconnect's whitelist of client ids
  if (const auto w = m.find("whitelist"); w != m.end() && w->is_array())
    for (const Json& id : *w)
      if (id.is_string()) spared.insert(id.get<std::string>());
  ws_->for_each_connection([&](ws::Connection& conn) {
    Client* c = Client::of(conn);
    if (c == nullptr || !c->connected() || !conn.is_open()) return;
    if (!client_id.empty() ? c->id() != client_id : identity(*c) != user) return;
    const Codec& codec = codec_of(c->protocol());
    if (op == "disconnect") {
      if (spared.contains(c->id())) return;
      ++stats_.errors["server_disconnect"];
      (void)conn.close(static_cast<std::uint16_t>(m.value("code", 3503)),
                       m.value("reason", std::string("force disconnect")));
    } else if (op == "unsubscribe") {
      if (hub_->unsubscribe(*c, channel)) return;  // not subscribed here
      roster_.remove(channel, *c);
      (void)conn.send_text(codec.unsubscribed(channel));
    } else if (op == "subscribe") {
      if (hub_->subscribed(*c, channel)) return;
      Command sub;
      sub.op = Op::subscribe;
      sub.channel = channel;
      sub.server_side = true;
      ReplyTo to;
      to.channel = channel;
      to.server_side = true;
      subscribe(*c, sub, reserve_reply(*c, std::move(to)));
    } else if (op == "refresh") {
      const std::int64_t at = m.value("expire_at", std::int64_t{0});
      if (m.value("expired", false)) {
        const Response r = codec.answer(ReplyTo{}, Failure{Fault::connection_expired, {}, 0});
        (void)conn.close(r.close_code, r.close_reason);
      } else if (at > 0) {
        const auto left = std::chrono::system_clock::time_point(std::chrono::seconds(at)) -
                          std::chrono::system_clock::now();
        conn.net().set_timeout(deadline::token_expiry,
                               std::chrono::duration_cast<heartwheel::Duration>(left));
      } else if (m.contains("expire_at")) {
        conn.net().clear_deadline(deadline::token_expiry);
      }
    }
  });
}

void Worker::answer_survey(const Json& m) {
  const std::string what = m.value("what", std::string());
  Json a = {{"survey", m.value("survey", std::string())},
            {"node", config_.node.uid},
            {"name", config_.node.name},
            {"worker", index_}};
  if (what == "info") {
    std::uint64_t clients = 0;
    std::unordered_set<std::string> users;
    ws_->for_each_connection([&](ws::Connection& conn) {
      const Client* c = Client::of(conn);
      if (c == nullptr || !c->connected()) return;
      ++clients;
      users.insert(identified() ? std::string(c->user()) : c->id());
    });
    const pubsub::HubStats h = hub_->stats();
    a["clients"] = clients;
    a["users"] = users.size();
    // The hub also counts this worker's own control subscriptions (the
    // survey and answer channels); the API reports clients' only.
    const std::uint64_t own = control_ ? control_->channel_count() : 0;
    a["subs"] = h.subscriptions >= own ? h.subscriptions - own : 0;
    // Channels are counted once per node (the roster is the process's).
    a["channels"] = index_ == 0 ? roster_.channel_count() : 0;
    a["uptime"] = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::steady_clock::now() - config_.node.started)
                      .count();
    a["version"] = std::string(server_version());
  } else if (what == "channels") {
    const std::string pattern = m.value("pattern", std::string());
    Json channels = Json::object();
    std::size_t bytes = 0;
    for (const pubsub::Hub::LocalCount& c : hub_->local_channels()) {
      if (reserved_channel(c.channel)) continue;
      if (!pattern.empty() && fnmatch(pattern.c_str(), c.channel.c_str(), 0) != 0) continue;
      bytes += c.channel.size() + 24;
      if (bytes + kAnswerSlack > broker_.limits().max_data_bytes) {
        a["truncated"] = true;
        break;
      }
      channels[c.channel] = c.subscribers;
    }
    a["channels"] = std::move(channels);
  } else if (what == "presence" && index_ == 0) {  // the roster is the node's
    std::size_t total = 0;
    Json members = Json::array();
    std::size_t bytes = 0;
    for (Member& member : roster_.list(m.value("channel", std::string()), 1000, total)) {
      bytes += member.client.size() + member.info.size() + 24;
      if (bytes + kAnswerSlack > broker_.limits().max_data_bytes) {
        a["truncated"] = true;
        break;
      }
      members.push_back({{"client", std::move(member.client)}, {"info", std::move(member.info)}});
    }
    a["members"] = std::move(members);
  }
  hub_->publish(m.value("reply", std::string()),
                a.dump(-1, ' ', false, Json::error_handler_t::replace), {}, {});
}

}  // namespace chat
