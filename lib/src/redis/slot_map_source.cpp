// One slot map shared by the cluster links of a loop (slot_map_source.h).
#include "slot_map_source.h"

#include <algorithm>
#include <utility>

namespace heartwheel::redis::detail {

SlotMapSource::SlotMapSource(LoopWheel& wheel, const LinkOptions& base)
    : reader_(wheel, base, [this](SlotMap&& map) { deliver(std::move(map)); }) {}

SlotMapSource::Member SlotMapSource::join(OnMap on_map) {
  const Member id = next_id_++;
  members_.push_back({id, std::move(on_map)});
  if (latest_) members_.back().on_map(*latest_);
  return id;
}

void SlotMapSource::leave(Member m) noexcept {
  run(m, false);
  keep_reading(m, false);
  members_.erase(
      std::remove_if(members_.begin(), members_.end(), [m](const Entry& e) { return e.id == m; }),
      members_.end());
}

SlotMapSource::Entry* SlotMapSource::find(Member m) noexcept {
  for (Entry& e : members_)
    if (e.id == m) return &e;
  return nullptr;
}

void SlotMapSource::run(Member m, bool on) {
  if (Entry* e = find(m)) e->running = on;
  const bool any =
      std::any_of(members_.begin(), members_.end(), [](const Entry& e) { return e.running; });
  if (any == reading_) return;
  reading_ = any;
  if (any)
    reader_.start();
  else
    reader_.stop();
}

void SlotMapSource::keep_reading(Member m, bool on) {
  if (Entry* e = find(m)) e->keep = on;
  reader_.keep_reading(
      std::any_of(members_.begin(), members_.end(), [](const Entry& e) { return e.keep; }));
}

// Each member gets the map in the order they joined. A member's on_map
// does not join or leave (the header's rule), so the vector stays put.
void SlotMapSource::deliver(SlotMap&& map) {
  reader_.learn(map.nodes());
  latest_ = std::move(map);
  for (Entry& e : members_) e.on_map(*latest_);
}

}  // namespace heartwheel::redis::detail
