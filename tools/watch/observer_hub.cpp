#include "observer_hub.hpp"

#include <ev.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "render/text_format.hpp"

namespace dshpty::watch {

using Json = nlohmann::json;

ObserverHub::ObserverHub(struct ev_loop* loop, Service& service)
    : loop_(loop), service_(service), recordings_(loop, service) {
  frame_timer_.bind<&ObserverHub::on_frame_timer>(loop, this);
  status_timer_.bind<&ObserverHub::on_status_tick>(loop, this);
}

ObserverHub::~ObserverHub() = default;

std::string ObserverHub::encode_frame(const Observation& view, unsigned observers,
                                      std::optional<std::int64_t> busy_ms) {
  const ScreenSnapshot& screen = view.screen;
  Json frame{{"host", static_cast<long>(::getpid())},
             {"sessionId", view.session.id},
             {"name", view.session.name ? Json(*view.session.name) : Json(nullptr)},
             {"owner", view.owner},
             {"type", view.session.type},
             {"status", render::format_status(view.session.status)},
             {"activity", std::string(observed_activity_name(view.activity))},
             {"observers", observers},
             {"rows", screen.rows},
             {"cols", screen.cols},
             {"cursor", Json{{"row", screen.cursor_row}, {"col", screen.cursor_col}, {"visible", screen.cursor_visible}}},
             {"alternate", screen.alternate},
             {"title", screen.title}};
  if (view.command) frame["command"] = *view.command;
  if (busy_ms) frame["busyMs"] = *busy_ms;
  // Text from a terminal may hold bytes that are not UTF-8: replaced, never a throw.
  Json lines = Json::array();
  for (const auto& line : screen.lines) lines.push_back(line);
  frame["lines"] = std::move(lines);
  return frame.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<std::string> ObserverHub::add(std::string_view word, Observer* observer) {
  std::optional<std::string> id;
  std::vector<std::string> named;
  for (const auto& record : service_.records()) {
    if (!record.published || record.state == RecordState::closed) continue;
    if (record.id == word) id = record.id;
    if (record.name && *record.name == word) named.push_back(record.id);
  }
  if (!id && named.size() > 1) {
    std::string ids;
    for (const auto& n : named) ids += (ids.empty() ? "" : ", ") + n;
    return make_error(Code::INVALID_ARGUMENT,
                      "more than one session is named \"" + std::string(word) + "\": give its id (" + ids + ")");
  }
  if (!id && named.size() == 1) id = named.front();
  if (!id) return make_error(Code::NO_SESSION, "no session \"" + std::string(word) + "\" on this host");
  // The session's own refusal (a backend that allows no observers) comes before anything.
  auto view = service_.observe(*id);
  if (!view) return view.error();
  recordings_.learn(*view);
  Watched& watched = watched_[*id];
  watched.observers.push_back(observer);
  watched.sent[observer] = 0;
  watched.dirty = true;  // the observer count changed, and the newcomer needs a frame
  schedule();
  if (!status_timer_.active()) status_timer_.start(kStatusTick, kStatusTick);
  return *id;
}

void ObserverHub::remove(Observer* observer) {
  for (auto it = watched_.begin(); it != watched_.end();) {
    auto& list = it->second.observers;
    auto found = std::find(list.begin(), list.end(), observer);
    if (found != list.end()) {
      list.erase(found);
      it->second.sent.erase(observer);
      it->second.dirty = true;  // the others' count changed
      schedule();
    }
    it = list.empty() ? watched_.erase(it) : std::next(it);
  }
  if (watched_.empty()) status_timer_.stop();
}

void ObserverHub::ready_again(Observer* observer) {
  for (auto& [id, watched] : watched_) {
    auto sent = watched.sent.find(observer);
    if (sent != watched.sent.end() && sent->second != watched.version && !watched.frame.empty()) {
      sent->second = watched.version;
      observer->deliver(watched.frame);
      return;
    }
  }
}

void ObserverHub::output_arrived(std::string_view session_id) {
  recordings_.output_arrived(session_id);
  auto it = watched_.find(session_id);
  if (it == watched_.end()) return;
  it->second.dirty = true;
  schedule();
}

unsigned ObserverHub::count(std::string_view session_id) const {
  auto it = watched_.find(session_id);
  return it == watched_.end() ? 0 : static_cast<unsigned>(it->second.observers.size());
}

std::vector<std::pair<Observation, unsigned>> ObserverHub::sessions() const {
  std::vector<std::pair<Observation, unsigned>> out;
  for (const auto& record : service_.records()) {
    if (!record.published || record.state == RecordState::closed) continue;
    auto view = service_.observe(record.id);
    if (!view) continue;
    recordings_.learn(*view);
    out.emplace_back(std::move(*view), count(record.id));
  }
  return out;
}

// A frame at most every kFrameInterval: the first change after a quiet spell goes out
// kFirstFrameDelay later, a flood's changes are folded into one frame per interval.
void ObserverHub::schedule() {
  if (frame_timer_.active()) return;
  const double since = ev_now(loop_) - last_frame_;
  const double wait = std::max(shell::seconds(kFirstFrameDelay), shell::seconds(kFrameInterval) - since);
  frame_timer_.start(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(wait)));
}

void ObserverHub::on_frame_timer() {
  last_frame_ = ev_now(loop_);
  std::vector<std::string> ids;
  for (auto& [id, watched] : watched_)
    if (watched.dirty) ids.push_back(id);
  for (const auto& id : ids) {
    auto it = watched_.find(id);
    if (it == watched_.end()) continue;
    if (refresh(id, it->second)) deliver(it->second);
  }
}

void ObserverHub::on_status_tick() {
  std::vector<std::string> ids;
  for (auto& [id, watched] : watched_) ids.push_back(id);
  for (const auto& id : ids) {
    auto it = watched_.find(id);
    if (it == watched_.end()) continue;
    if (refresh(id, it->second)) deliver(it->second);
  }
}

bool ObserverHub::refresh(const std::string& id, Watched& watched) {
  watched.dirty = false;
  auto view = service_.observe(id);
  if (!view) {
    end_session(id, view.error()->code == Code::NO_SESSION ? "the session is gone" : view.error()->message);
    return false;
  }
  if (!view->session.status.running()) {
    // The last screen, then the end: an observer sees how it finished.
    watched.frame = encode_frame(*view, static_cast<unsigned>(watched.observers.size()), std::nullopt);
    ++watched.version;
    deliver(watched);
    end_session(id, "the session ended: " + render::format_status(view->session.status));
    return false;
  }
  const double now = ev_now(loop_);
  const bool busy = view->activity == ObservedActivity::busy;
  if (busy && (!watched.busy || watched.busy_command != view->command)) watched.busy_since = now;
  watched.busy = busy;
  watched.busy_command = busy ? view->command : std::nullopt;
  std::optional<std::int64_t> busy_ms;
  // Whole seconds, so an idle busy session changes its frame once a second at most.
  if (busy) busy_ms = static_cast<std::int64_t>(now - watched.busy_since) * 1000;
  std::string frame = encode_frame(*view, static_cast<unsigned>(watched.observers.size()), busy_ms);
  if (frame != watched.frame) {
    watched.frame = std::move(frame);
    ++watched.version;
  }
  return true;
}

void ObserverHub::deliver(Watched& watched) {
  // An observer may remove itself (or others) from deliver(): walk a copy, check each.
  const std::vector<Observer*> observers = watched.observers;
  const std::string frame = watched.frame;
  const std::uint64_t version = watched.version;
  for (Observer* observer : observers) {
    auto sent = watched.sent.find(observer);
    if (sent == watched.sent.end() || sent->second == version || !observer->ready()) continue;
    sent->second = version;
    observer->deliver(frame);
  }
}

void ObserverHub::end_session(const std::string& id, const std::string& why) {
  auto it = watched_.find(id);
  if (it == watched_.end()) return;
  const std::vector<Observer*> observers = std::move(it->second.observers);
  watched_.erase(it);
  if (watched_.empty()) status_timer_.stop();
  for (Observer* observer : observers) observer->ended(why);
}

}  // namespace dshpty::watch
