#include "recording_index.hpp"

#include <algorithm>

namespace dshpty::watch {

RecordingIndex::RecordingIndex(struct ev_loop* loop, Service& service) : service_(service) {
  learn_timer_.bind<&RecordingIndex::on_learn_timer>(loop, this);
}

std::string recording_file_name_of(std::string_view path) {
  const auto slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return {};
  for (char c : name) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
    if (!safe) return {};
  }
  return std::string(name);
}

void RecordingIndex::output_arrived(std::string_view session_id) {
  if (known_.count(session_id) || pending_.count(session_id)) return;
  pending_.emplace(session_id);
  // At the next loop iteration, outside the tap: a close takes several iterations (the
  // tree's teardown), so a session that printed is learnt before it is gone.
  learn_timer_.start(std::chrono::nanoseconds(0));
}

void RecordingIndex::learn(const Observation& view) {
  known_.insert(view.session.id);
  pending_.erase(view.session.id);
  if (!view.session.recording) return;
  std::string file = recording_file_name_of(view.session.recording->path);
  if (file.empty()) return;
  recorded_[view.session.id] = RecordedSession{view.session.id, view.owner, view.session.name, std::move(file), true};
}

void RecordingIndex::on_learn_timer() {
  // A session still being set up is tried again at the next tick; one gone is dropped.
  const auto ids = std::move(pending_);
  pending_.clear();
  const auto records = service_.records();
  for (const std::string& id : ids) {
    auto record = std::find_if(records.begin(), records.end(), [&](const RecordView& r) { return r.id == id; });
    if (record == records.end() || record->state == RecordState::closed) continue;
    if (!record->published) {
      pending_.insert(id);
      continue;
    }
    if (auto view = service_.observe(id)) learn(*view);
  }
  if (!pending_.empty()) learn_timer_.start(kLearnDelay);
}

std::vector<RecordedSession> RecordingIndex::sessions() const {
  std::set<std::string, std::less<>> open;
  for (const auto& record : service_.records())
    if (record.state != RecordState::closed) open.insert(record.id);
  std::vector<RecordedSession> out;
  for (const auto& [id, session] : recorded_) {
    out.push_back(session);
    out.back().live = open.count(id) > 0;
  }
  return out;
}

std::optional<RecordedSession> RecordingIndex::find(std::string_view session_id) const {
  auto it = recorded_.find(session_id);
  if (it == recorded_.end()) return std::nullopt;
  return it->second;
}

}  // namespace dshpty::watch
