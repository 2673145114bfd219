#include "progress_pump.hpp"

#include <algorithm>

#include "render/result_cap.hpp"
#include "render/status_lookalikes.hpp"
#include "text/truncation.hpp"

namespace dshpty::mcp {

ProgressPump::ProgressPump(struct ev_loop* loop, engine::Engine& engine, std::string owner, Emit emit)
    : engine_(engine), owner_(std::move(owner)), emit_(std::move(emit)) {
  timer_.bind<&ProgressPump::flush>(loop, this);
}

void ProgressPump::watch(std::string send_key, std::string session_id, Json token) {
  watched_[std::move(send_key)] = Watched{std::move(session_id), std::move(token)};
}

void ProgressPump::forget(std::string_view send_key) {
  if (const auto it = watched_.find(send_key); it != watched_.end()) watched_.erase(it);
  if (watched_.empty()) timer_.stop();
}

void ProgressPump::output_arrived(std::string_view session_id) {
  bool any = false;
  for (auto& [key, watched] : watched_)
    if (watched.session_id == session_id) watched.dirty = any = true;
  // The bytes reach the send's output after this hook returns; the timer reads them later.
  if (any) timer_.start_if_idle(kInterval);
}

void ProgressPump::flush() {
  // emit_ only writes, so the table does not change under us.
  for (auto& [key, watched] : watched_) {
    if (!watched.dirty) continue;
    watched.dirty = false;
    auto delta = engine_.send_output(owner_, key);
    if (!delta || delta->text.empty()) continue;
    const std::size_t cap = std::max(render::kMinMaxResultBytes,
                                     std::min(kMaxMessageBytes, engine_.settings().max_result_bytes));
    // The newest output: the oldest is what a slow reader loses, as the backend drops it.
    bool dropped = delta->truncated;
    // A delta starts wherever the output was: its first line is checked like any other.
    std::string text = render::mark_status_lookalikes(text::newest(delta->text, cap, dropped));
    if (dropped) text = "[earlier output dropped]\n" + text;
    emit_(watched.token, ++watched.progress, std::move(text));
  }
}

}  // namespace dshpty::mcp
