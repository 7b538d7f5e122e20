// Private to the chat core: the control channel's subscriber and a survey
// in flight (control.cpp has the why). Included where a Worker is destroyed.
#pragma once

#include <heartwheel/pubsub/subscriber.h>
#include <heartwheel/timer/timer_entry.h>

#include <functional>
#include <string>
#include <vector>

#include "worker.h"

namespace chat {

class Worker::Control final : public heartwheel::pubsub::Subscriber {
 public:
  explicit Control(Worker& worker) : worker_(worker) {}
  ~Control() override = default;
  heartwheel::pubsub::DeliveryOutcome on_publication(const heartwheel::pubsub::Publication& p,
                                                     const heartwheel::pubsub::Frame&) override {
    worker_.on_control(p);
    return heartwheel::pubsub::DeliveryOutcome::delivered;
  }

 private:
  Worker& worker_;
};

// A survey waiting for its answers; fires kSurveyTimeout after the question:
// the answers so far are all there will be.
struct Worker::Survey final : heartwheel::TimerEntry {
  Survey(Worker& w, std::string survey_id)
      : heartwheel::TimerEntry(&fire), worker(w), id(std::move(survey_id)) {}
  ~Survey() { worker.timers_->cancel(*this); }
  static void fire(heartwheel::TimerEntry& e) {
    auto& s = static_cast<Survey&>(e);
    s.worker.finish_survey(s.id);  // destroys s (finish_survey takes a copy)
  }
  Worker& worker;
  std::string id;
  std::uint64_t expected = 1;
  std::vector<Json> answers;
  std::function<void(std::vector<Json>)> done;
};

}  // namespace chat
