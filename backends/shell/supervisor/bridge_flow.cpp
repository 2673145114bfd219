// The bridge's flow control and prompt hold (supervisor/bridge.hpp). Frames made while
// handling one event go out together before the loop polls (link/frame_link.hpp); output
// waits while a send's answer is held for its prompt (supervisor/prompt_hold.hpp), and the
// terminal is read only while the host keeps up.
#include <algorithm>

#include "supervisor/bridge.hpp"

namespace dshpty::shell {

namespace {
// A held outbox goes out once it holds this much: output that fast streams as it comes.
constexpr std::size_t kMaxHeldBytes = 16 * 1024;
}  // namespace

void Bridge::queue_flush() {
  end_hold();
  if (!link_down()) link_.flush_soon();
  update_flow();
}

void Bridge::queue_output() {
  if (hold_.holding() && link_.outbox_size() <= kMaxHeldBytes) return update_flow();
  queue_flush();
}

// The host's input is about to be written: what the terminal answers waits for the
// prompt's end, for at most hold_ms_ from the first input of the hold.
void Bridge::begin_hold() {
  if (!hold_.begin()) return;
  hold_timer_.start_if_idle(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::milli>(hold_ms_)));
  // A flush already queued this turn (output drained before the write) joins the hold.
  link_.hold();
}

void Bridge::end_hold() {
  hold_.end();
  hold_timer_.stop();
}

// Output is read from the terminal only while the host has acknowledged all but a window
// of it and the outbox is drained enough: the program writing blocks otherwise.
void Bridge::update_flow() {
  if (!channel_) return;
  // A lingering session with no host reads on (its ring drops the oldest); with one, the
  // window counts from the ring's end, replay included.
  const std::uint64_t unacked =
      keeper_ ? keeper_->ring().end() - std::min(acked_, keeper_->ring().end()) : sent_ - acked_;
  const bool pause =
      (!keeper_ || !link_down()) && (unacked > frames::kWindow || link_.outbox_size() > kOutboxBound);
  if (pause != paused_) {
    paused_ = pause;
    channel_->pause_output(pause);
  }
}

}  // namespace dshpty::shell
