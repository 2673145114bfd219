// The stream channel's reconnect machine (docs/outlive.md, "Links that reconnect"): a
// lingering remote session whose link died is taken back by running the transport again
// and presenting the session's token (ATTACH with resume), until linger and the link
// timeout have passed since the cut. States: stream_channel.hpp's LinkState.
#include <algorithm>

#include "remote/stream_channel.hpp"

namespace dshpty::shell {

namespace {
// Between reconnect attempts: at once, then doubling up to this bound.
constexpr std::chrono::milliseconds kFirstRetry{250};
constexpr std::chrono::milliseconds kMaxRetry{4000};
}  // namespace

void StreamChannel::lose_link(const std::string& words) {
  if (!reconnecting_) {
    cut_at_ = ev_now(loop_);
    attempts_ = 0;
    reconnecting_ = words;
  }
  last_attempt_words_ = words;
  jobs_.link_gone(words);
  state_ = LinkState::cut;  // until an attempt's link is up; input is kept meanwhile
  drop_transport();
  schedule_attempt();
}

void StreamChannel::schedule_attempt() {
  const ev_tstamp now = ev_now(loop_);
  // The far helper notices the cut within the link timeout (at once on EOF), then lingers:
  // past both, nothing can be waiting for this host any more.
  double deadline = cut_at_ + launch_.linger->seconds + seconds(launch_.link_timeout);
  // A kill asked for meanwhile (a close) waits for the link one link timeout at most:
  // the far helper's linger finishes the tree otherwise.
  if (kill_asked_at_ > 0) deadline = std::min(deadline, kill_asked_at_ + seconds(launch_.link_timeout));
  if (now >= deadline) {
    return report_lost(launch_.label + ": the link could not be restored within linger (" +
                       std::to_string(launch_.linger->seconds) + " s) and the link timeout; the last attempt: " +
                       last_attempt_words_ + "; the end of the far session is unconfirmed");
  }
  std::chrono::duration<double> delay{0};
  if (attempts_ > 0) delay = std::min<std::chrono::duration<double>>(kMaxRetry, kFirstRetry * (1 << std::min(attempts_ - 1, 4)));
  retry_.start(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::min(delay, std::chrono::duration<double>(deadline - now))));
}

void StreamChannel::attempt() {
  ++attempts_;
  stderr_tail_ = StderrTail();
  welcomed_ = false;
  broken_at_ = 0;
  auto transport = spawn_transport(launch_.transport);
  if (!transport) {
    last_attempt_words_ = transport.error()->message;
    return schedule_attempt();
  }
  transport_ = std::move(*transport);
  state_ = LinkState::resuming;
  // The token travels in-band, in the ATTACH right behind HELLO: the transport's command
  // is the one the session started with.
  std::string out;
  frames::encode(out, hello());
  frames::encode(out, frames::Attach{key_, token_, launch_.linger->owner, true, consumed_});
  watch_link(std::move(out));
}

void StreamChannel::resume(std::uint64_t far_input_received) {
  const std::uint64_t have = far_input_received - in_base_;
  if (have < kept_from_ || have > bytes_queued_) {
    final_words_ = final_words_.value_or("");
    return break_link("protocol error: the far side took input this host no longer has");
  }
  std::string out;
  // A mark goes before the write it was made for: if the far side may not have that
  // write, it may not have the mark either (frames keep their order).
  if (mark_at_ && have <= *mark_at_) frames::encode(out, frames::Mark{1});
  frames::encode(out, frames::Sending{send_live_});
  if (has(frames::kCapKeepsShown)) frames::encode(out, frames::Shown{shown_});
  if (resize_pending_) {
    frames::encode(out, frames::Resize{static_cast<std::uint16_t>(rows_), static_cast<std::uint16_t>(cols_)});
  }
  // The input the cut ate, from the first byte the far side lacks: typed exactly once.
  frames::encode_in(out, std::string_view(input_kept_).substr(static_cast<std::size_t>(have - kept_from_)));
  if (kill_grace_) frames::encode(out, frames::Kill{*kill_grace_});
  resize_pending_ = false;
  if (state_ == LinkState::resuming) state_ = LinkState::up;
  reconnecting_.reset();
  attempts_ = 0;
  // Probes asked before the cut are never answered: the next question asks again.
  facts_.invalidate();
  write_frame(frames::Encoded{std::move(out)});
}

void StreamChannel::report_lost(const std::string& words) {
  record_.remove(key_);  // nothing to take back any more
  reconnecting_.reset();
  retry_.stop();
  link_.stop();
  state_ = LinkState::gone;
  end_output();
  events_.on_lost(make_error(Code::BACKEND_FAILED, words));
}

}  // namespace dshpty::shell
