// The local channel's events, as frames to the host (supervisor/bridge.hpp); a lingering
// session with no host keeps them in its keeper (the ring, the tombstone) instead.
#include <signal.h>

#include "supervisor/bridge.hpp"

namespace dshpty::shell {

frames::Exited Bridge::exited_frame() const {
  return {exited_->signal.has_value(), exited_->signal ? *exited_->signal : exited_->exit_code.value_or(0)};
}

void Bridge::on_started(pid_t shell_pid) {
  shell_pid_ = shell_pid;
  if (keeper_) keeper_->set_shell_pid(shell_pid);
  link_.queue(frames::Started{shell_pid});
  queue_flush();
}

void Bridge::on_start_failed(Error cause) {
  link_.queue(frames::StartFailed{clip(cause->message)});
  queue_flush();
}

void Bridge::on_output(std::string_view bytes) {
  // A limit reached before this output was read reaches the host ahead of it (the kernel
  // signals no refused fork on cgroup v1: its counter is read here).
  report_limit();
  // The prompt's end releases the hold (queue_output then flushes).
  if (hold_.saw_prompt_end(bytes)) end_hold();
  if (keeper_) {
    // Kept for the next host; sent now only when this link is attached and caught up
    // (a replay in progress sends it in its turn, from the ring).
    const bool caught_up = !link_down() && !replaying_ && sent_ == keeper_->ring().end();
    keeper_->ring().append(bytes);
    // No host records it now: the session's own file goes on here (the wall clock, as the
    // host's recorder times it).
    if (detached_record_ && link_down()) detached_record_->output(bytes, ev_time());
    if (!caught_up) return pump_ring();
  }
  // The facts of the moment this output was read, before it, when they changed.
  frames::TerminalFacts f = cheap_facts();
  if (!(f == last_)) queue_state(0, f);
  sent_ = frames::encode_out(link_.outbox(), sent_, bytes);
  if (!link_down()) queue_output();
}

void Bridge::on_output_ended() {
  output_ended_ = true;
  // After the last OUT the ring holds, never ahead of it.
  if (keeper_) return pump_ring();
  link_.queue(frames::Empty{frames::Type::output_ended});
  if (!link_down()) queue_flush();
}

void Bridge::on_write_progress() {
  if (keeper_ && link_down()) return;
  link_.queue(frames::Written{channel_ ? channel_->bytes_written() : 0});
  if (!link_down()) queue_output();
}

void Bridge::on_exited(SessionStatus status) {
  exited_ = status;
  if (keeper_ && link_down()) {
    // The shell ended with no host to tell: the session is over; the rest of its tree
    // goes too, and the tombstone keeps the shell's own status.
    return end_lingering();
  }
  if (keeper_ && replaying_) return;  // said once the replay is through
  link_.queue(exited_frame());
  if (!link_down()) queue_flush();
}

void Bridge::on_quiescent() {
  // Every process of the tree is gone, so nothing holds the terminal: what it still has
  // is the last output, then its end.
  channel_->pause_output(false);
  drain(1024);
  if (keeper_ && link_down()) {
    // Linger ran out (or the shell ended) with no host attached: the tombstone answers
    // a late attach.
    const std::string proof = "the session's helper reaped every process of its tree";
    if (ending_ == Ending::expired || !exited_) {
      keeper_->bury(std::nullopt, SIGKILL, "killed after linger", proof);
    } else {
      keeper_->bury(exited_->signal ? std::nullopt : exited_->exit_code, exited_->signal,
                    "exited while no host held it", proof);
    }
    return finish(0);
  }
  if (link_down()) {
    // The host may have closed only its sending side (EOF on our stdin, its reading side
    // open): say it, without blocking on a link that may be stalled or gone.
    link_.queue(frames::Empty{frames::Type::quiescent});
    link_.flush_once();
    return finish(0);
  }
  finish_quiescent();
}

void Bridge::on_lost(Error cause) {
  if (keeper_ && link_down()) keeper_->bury(std::nullopt, std::nullopt, "lost", cause->message);
  link_.queue(frames::ErrorFrame{static_cast<std::uint32_t>(frames::ErrorCode::helper_failed), clip(cause->message)});
  if (!link_down()) link_.flush_blocking(kLastWords);
  finish(1);
}

}  // namespace dshpty::shell
