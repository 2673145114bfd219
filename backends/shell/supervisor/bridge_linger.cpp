// The bridge's lingering session (docs/outlive.md; supervisor/bridge.hpp): LINGER starts
// the keeper; a link's end detaches; a later host that passed the keeper's checks is
// adopted as the new link and gets the ring replayed, then live output.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "supervisor/bridge.hpp"

namespace dshpty::shell {

void Bridge::start_linger(std::string_view payload) {
  auto linger = frames::decode<frames::Linger>(payload);
  if (!linger || keeper_ || linger->seconds == 0) return protocol_error("bad LINGER");
  LingerSpec spec;
  spec.seconds = linger->seconds;
  spec.ring_bytes = linger->ring_bytes;
  spec.state_dir = std::move(linger->state_dir);
  spec.owner = std::move(linger->owner);
  spec.type = std::move(linger->type);
  if (!linger->name.empty()) spec.name = linger->name;
  // A remote host names no directory (its own paths mean nothing here): this machine's
  // --state-dir, else the default.
  if (spec.state_dir.empty()) spec.state_dir = state_dir_;
  spec.mark_nonce = mark_nonce_;
  if (detached_record_) detached_record_->set_secret(mark_nonce_);
  spec.shell = shell_name_;
  auto keeper = LingerKeeper::start(
      loop_, std::move(spec),
      {[this](proc::UniqueFd link, frames::FrameReader reader, AttachRequest request) {
         adopt(std::move(link), std::move(reader), request);
       },
       [this] { end_lingering(Ending::expired); }});
  if (!keeper) {
    // The session cannot linger as asked: it does not run at all.
    link_.queue(frames::ErrorFrame{static_cast<std::uint32_t>(frames::ErrorCode::linger_unsafe),
                                   clip(keeper.error()->message)});
    link_.flush();
    return link_ended("");
  }
  keeper_ = std::move(*keeper);
  keeper_->set_size(rows_, cols_);
  if (shell_pid_ > 0) keeper_->set_shell_pid(shell_pid_);
  // Out of the session whoever started us made (sshd makes one per connection), so that
  // its end does not take the session along. A session leader already is in its own.
  if (::getsid(0) != ::getpid()) (void)::setsid();
  link_.queue(frames::Lingering{keeper_->key(), keeper_->token()});
  queue_flush();
}

// The host went away (EOF, an error, silence): the session waits for the next one.
void Bridge::detach(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "dshpty-supervisor --stdio: %s; lingering\n", why.c_str());
  link_timer_.stop();
  close_link();
  replaying_ = false;
  keeper_->set_attached(false);
  if (exited_) return end_lingering();
  update_flow();
}

// A connection that passed every check takes the session over: the host holding it (if
// any) loses its link, the new one gets the ring from its oldest byte, then live output.
void Bridge::adopt(proc::UniqueFd link, frames::FrameReader reader, AttachRequest request) {
  const std::uint32_t timeout_ms = request.link_timeout_ms;
  // The new host records the session in a file of its own from here on.
  if (detached_record_) {
    detached_record_->host_attached(ev_time());
    detached_record_.reset();
  }
  if (!link_down()) {
    link_timer_.stop();
    close_link();
  }
  link_.open(std::move(link), std::move(reader));
  link_state_ = HostLink::up;
  link_timeout_ms_ = timeout_ms;
  if (timeout_ms > 0) link_timer_.again(std::chrono::milliseconds(timeout_ms));
  keeper_->set_attached(true);
  const auto& ring = keeper_->ring();
  const std::uint64_t to = ring.end();
  // A new host gets the ring from its oldest byte; the host that held the session goes on
  // from what it consumed (never past the end: it cannot have consumed more).
  const std::uint64_t from = request.resume ? std::clamp(request.output_from, ring.start(), to) : ring.start();
  // Output that host never got and the ring no longer holds: exact for a reconnect, an
  // upper bound for a new host (hosts acknowledge in steps).
  const std::uint64_t seen = request.resume ? std::min(request.output_from, to) : acked_;
  const std::uint64_t gap = from > seen ? from - seen : 0;
  acked_ = std::max(acked_, from);
  link_.queue(welcome());
  link_.queue(frames::Attached{from, to, gap, keeper_->send_live(), shell_pid_, in_received_, keeper_->token(),
                               keeper_->shown()});
  keeper_->note_send(false);
  limit_sent_.reset();
  report_limit();  // a limit reached before this host came
  sent_ = from;
  output_ended_sent_ = false;
  replaying_ = true;
  replay_to_ = to;
  pump_ring();
  // The ring no longer reaches back to the start: a full-screen program redraws its
  // screen on SIGWINCH, so the rebuilt screen is whole again.
  if ((request.resume ? gap > 0 : from > 0) && channel_ && !exited_) {
    const pid_t fg = channel_->foreground_group();
    auto modes = channel_->terminal_modes();
    if (fg > 0 && modes && !modes->canonical) (void)channel_->signal_group(fg, SIGWINCH);
  }
  link_.dispatch_buffered();
}

// Sends ring output the link may take now (within the window); after a replay's last
// byte, what a fresh start says: STARTED, the facts, and how the shell ended if it did.
void Bridge::pump_ring() {
  if (!keeper_ || link_down()) return;
  auto& ring = keeper_->ring();
  if (sent_ < ring.start()) sent_ = ring.start();
  while (sent_ < ring.end() && sent_ < acked_ + frames::kWindow && link_.outbox_size() < kOutboxBound) {
    const std::string_view chunk = ring.view(sent_, frames::kMaxOutChunk);
    sent_ = frames::encode_out(link_.outbox(), sent_, chunk);
  }
  if (replaying_ && sent_ >= replay_to_) {
    replaying_ = false;
    // Input written while no host was attached was never reported: a reconnecting host
    // waits for it to call its send's input written. After the replay, so the output
    // it already has cannot be taken for output read after that write.
    if (channel_) link_.queue(frames::Written{channel_->bytes_written()});
    link_.queue(frames::Started{shell_pid_});
    if (channel_) queue_state(0, cheap_facts());
    if (exited_) link_.queue(exited_frame());
  }
  if (!replaying_ && output_ended_ && !output_ended_sent_ && sent_ == ring.end()) {
    output_ended_sent_ = true;
    link_.queue(frames::Empty{frames::Type::output_ended});
  }
  queue_output();
}

// The session is over with no host attached (linger ran out, or the shell exited): the
// whole tree is killed; on_quiescent writes the tombstone.
void Bridge::end_lingering(Ending why) {
  const bool under_way = ending_ != Ending::none;
  if (why == Ending::expired) ending_ = Ending::expired;  // the tombstone's words, even mid-kill
  if (under_way) return;
  ending_ = why;
  if (!channel_) return finish(0);
  kill_now();
}

}  // namespace dshpty::shell
