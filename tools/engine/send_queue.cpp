#include "send_queue.hpp"

#include <utility>

namespace dshpty::engine {

void SendQueue::wind_down(std::string session_id, std::string owner, std::string key) {
  Session& session = sessions_[std::move(session_id)];
  session.owner = std::move(owner);
  session.cancelled_key = std::move(key);
}

bool SendQueue::must_wait(std::string_view session_id, std::string_view owner) const {
  const auto it = sessions_.find(session_id);
  return it != sessions_.end() && it->second.owner == owner;
}

void SendQueue::push(Queued queued) {
  const auto it = sessions_.find(queued.request.session_id);
  if (it != sessions_.end()) it->second.waiting.push_back(std::move(queued));
}

bool SendQueue::settled(std::string_view session_id, std::string_view owner, std::string_view key) {
  const auto it = sessions_.find(session_id);
  if (it == sessions_.end() || it->second.owner != owner || it->second.cancelled_key != key) return false;
  it->second.cancelled_key.clear();
  return true;
}

std::vector<SendQueue::Queued> SendQueue::release(std::string_view session_id) {
  const auto it = sessions_.find(session_id);
  if (it == sessions_.end() || !it->second.cancelled_key.empty()) return {};
  auto waiting = std::move(it->second.waiting);
  sessions_.erase(it);
  return waiting;
}

std::optional<SendQueue::Queued> SendQueue::take(std::string_view owner, std::string_view key) {
  for (auto& [id, session] : sessions_)
    for (auto it = session.waiting.begin(); it != session.waiting.end(); ++it)
      if (it->owner == owner && it->key == key) {
        Queued out = std::move(*it);
        session.waiting.erase(it);
        return out;
      }
  return std::nullopt;
}

const SendQueue::Queued* SendQueue::find(std::string_view owner, std::string_view key) const {
  for (const auto& [id, session] : sessions_)
    for (const auto& queued : session.waiting)
      if (queued.owner == owner && queued.key == key) return &queued;
  return nullptr;
}

bool SendQueue::others_have(std::string_view owner, std::string_view key) const {
  for (const auto& [id, session] : sessions_)
    for (const auto& queued : session.waiting)
      if (queued.owner != owner && queued.key == key) return true;
  return false;
}

}  // namespace dshpty::engine
