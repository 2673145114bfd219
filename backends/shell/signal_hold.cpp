// Signals and cancels that arrive while the shell is still starting the command a send
// typed: held until the command's own group has the terminal (shell_session.hpp,
// "Signals"). Measured before the hold: 7 of 10 immediate cancels of `echo x; sleep 60`
// through dshpty-repl --json left the sleep running (bash took the SIGINT while forking it),
// and a SIGINT before readline had the whole line dropped the line and reported the
// previous command's status.
#include <csignal>
#include <cstring>
#include <string>

#include "shell_session.hpp"

namespace dshpty::shell {

// The shell has the terminal and has not been seen reading it since the live send's write
// (it is reading that line, running a builtin of it, or starting its job), or the job's
// group has it but its leader has not exec'd yet.
bool ShellSession::shell_starting_command() {
  if (!send_ || !send_->write_started() || send_->settled || !shell_pid_) return false;
  if (!channel_ || channel_->output_ended() || !channel_->proves_readers()) return false;
  const pid_t foreground = channel_->foreground_group();
  if (foreground != *shell_pid_) return foreground > 0 && channel_->leader_is_shell_copy(foreground);
  if (input_waiting()) return true;  // the line is not even read yet
  // A PTY hands the master's bytes to the line discipline from a kernel worker: for a
  // moment after the write the queue is empty and the shell still asleep at its prompt, not
  // having seen the line (and a shell that was still printing its prompt at the send's
  // baseline counts as "ran since"). With marks the shell says when it took a line: a
  // command start (C), or a new prompt (an empty or broken line). Measured before this
  // rule: 1 in ~60 SIGINTs right after the write, under ASan, reached readline mid-line.
  // A line the shell never takes (a continuation prompt) waits out kSignalHold.
  if (send_typed_line() && !prompt_watch_.line_taken()) return true;
  return !channel_->foreground_reading();
}

// The live send typed a whole line (its Enter written) on a session whose shell marks its
// prompts.
bool ShellSession::send_typed_line() const {
  return send_ && send_->landed() && !send_->checks_in() && send_->submit && !params_.mark_nonce.empty();
}

Status ShellSession::deliver_signal(pid_t pgid, int signo) {
  if (pgid <= 0) {
    return make_error(Code::BACKEND_FAILED, "the PTY has no foreground process group to signal");
  }
  if (signo == SIGKILL && shell_pid_ && pgid == *shell_pid_) {
    return make_error(Code::INVALID_ARGUMENT,
                      "refusing SIGKILL to the shell's own process group: close the session instead");
  }
  // A group leader that ignores the signal (an interactive bash and SIGTERM or SIGTSTP at its
  // prompt) is not disturbed by it: no aftermath for the next send to wait out. The
  // aftermath's readers are taken *before* the signal: once it has landed the job may be
  // gone and the shell back asleep at its prompt within microseconds (seen under load), and
  // a baseline taken then would hold the shell's own wait against it: no reader would ever
  // be proven, and the send would run to its timeout.
  if (!channel_->ignores_signal(pgid, signo)) note_aftermath();
  return channel_->signal_group(pgid, signo);
}

void ShellSession::hold_signal(HeldSignal held) {
  held.deadline = ev_now(loop_) + seconds(kSignalHold);
  held_signals_.push_back(std::move(held));
  signal_hold_timer_.start_if_idle(kSignalHoldTick, kSignalHoldTick);
}

// Delivers the held signals whose wait is over (all of them once the command has the
// terminal or the shell reads again), in the order they came.
void ShellSession::release_held_signals() {
  // Output first: a send settled by it makes its cancel moot.
  if (channel_ && !channel_->output_ended()) channel_->read_available();
  if (held_signals_.empty()) return;
  const bool waiting = shell_starting_command();
  const pid_t front = channel_->foreground_group();
  const ev_tstamp now = ev_now(loop_);
  // The link to a far helper is being restored: a cancel's SIGINT waits for it, its wait
  // starting again once the link is back. Delivered now it would fail, and its wait would
  // run out on facts the cut froze: a cancel acknowledged and never delivered.
  LingerFacet* linger = channel_->linger();
  const bool restoring = linger && linger->reconnecting();
  std::vector<HeldSignal> due;
  for (auto it = held_signals_.begin(); it != held_signals_.end();) {
    if (restoring && !it->signal) {
      it->deadline = now + seconds(kSignalHold);
      ++it;
      continue;
    }
    // A cancel of a typed line waits for its own command's start (its C mark), however the
    // terminal looks: a command still running in front of a line typed ahead is not it.
    const bool own_started = !it->own_command_only || prompt_watch_.command_started();
    bool hold = (waiting || !own_started) && now < it->deadline;
    // The line's command started and the shell has the terminal again: between two commands
    // of its list (it was seen "reading" there, and a SIGINT to it let the list run on), or
    // the line is over and its prompt settles the send. The next command gets it.
    if (it->own_command_only && own_started && shell_pid_ && front == *shell_pid_) hold = now < it->deadline;
    if (it->sent == HeldSignal::Sent::unsettled) {
      // Sent to a leader that ran with nothing pending and no handler: it dies of it, or it
      // had dropped it and ends on its own. Looked at each tick until it ends (its deadline
      // bounds the looks).
      if (it->send != send_ || !send_ || send_->settled) {
        it = held_signals_.erase(it);
        continue;
      }
      const proc::SignalFate fate = channel_->signal_fate(it->sent_to, it->signo);
      if (fate == proc::SignalFate::unsettled && now < it->deadline) {
        ++it;
        continue;
      }
      if (fate != proc::SignalFate::missed) {
        it = held_signals_.erase(it);
        continue;
      }
      it->sent = HeldSignal::Sent::missed;
      it->deadline = now + seconds(kSignalHold);
    }
    if (it->sent == HeldSignal::Sent::missed) {
      // Its SIGINT missed the line's command: the next one in front gets it. Nothing new
      // in front by the deadline (the list over, or a long builtin): dropped.
      if (now >= it->deadline || it->send != send_ || !send_ || send_->settled) {
        it = held_signals_.erase(it);
        continue;
      }
      hold = waiting || front <= 0 || front == it->sent_to || (shell_pid_ && front == *shell_pid_);
    }
    if (hold) {
      ++it;
      continue;
    }
    due.push_back(std::move(*it));
    it = held_signals_.erase(it);
  }
  if (held_signals_.empty()) signal_hold_timer_.stop();
  for (HeldSignal& held : due) {
    if (phase_ != Phase::running) break;  // a callback closed us: fail_held_signals answers
    if (!held.signal) {
      // A cancel: only for the send it was for.
      if (!held.send || held.send != send_ || held.send->settled) continue;
      const pid_t foreground = channel_->foreground_group();
      // Its line never started a command: the shell may still hold it (part of it read, a
      // continuation prompt), its own input to clear; any other group in front runs a
      // command the line was typed behind, and is left alone.
      if (held.own_command_only && !prompt_watch_.command_started() &&
          (!shell_pid_ || foreground != *shell_pid_)) {
        // The line may still wait behind that command (a channel that could not take it
        // back): the cancel goes to the line's own command once its C comes.
        held.send->cancel = SendState::Cancel::on_command;
        continue;
      }
      // The hold ran out with no C and the shell in front: what of the line is still unread
      // is taken back first (a SIGINT would clear the prompt and leave the line to run
      // after it); only a line the shell holds is cleared by the SIGINT.
      if (held.own_command_only && !prompt_watch_.command_started() && !held.send->checks_in() &&
          take_back(*held.send)) {
        if (send_) check_prompt_readiness();
        continue;
      }
      // The shell took the terminal back since the look above (the line's command ended,
      // its next not started yet): a SIGINT to it there let the list run on (seen: 1 in
      // 300 at zsh). The next command gets it, as above.
      if (held.own_command_only && prompt_watch_.command_started() && shell_pid_ && foreground == *shell_pid_ &&
          now < held.deadline) {
        held_signals_.push_back(std::move(held));
        signal_hold_timer_.start_if_idle(kSignalHoldTick, kSignalHoldTick);
        continue;
      }
      const Status delivered = deliver_signal(foreground, held.signo);
      // Measured before this: 10 of 80 cancels a few ms after the write of
      // `touch f; sleep 0.3; echo x` hit touch's group just after touch exited, while bash
      // had not yet reaped it and taken the terminal back; the list then ran to its end.
      // And about 1 in 200 hit touch while it was exiting, still 'R' in /proc: the signal
      // was dropped, touch's status was its own, and the list ran on.
      if (!held.own_command_only || (shell_pid_ && foreground == *shell_pid_)) continue;
      const proc::SignalFate fate =
          delivered ? channel_->signal_fate(foreground, held.signo) : proc::SignalFate::missed;
      if (fate == proc::SignalFate::reached) continue;
      held.sent = fate == proc::SignalFate::missed ? HeldSignal::Sent::missed : HeldSignal::Sent::unsettled;
      held.sent_to = foreground;
      held.deadline = now + seconds(kSignalHold);
      held_signals_.push_back(std::move(held));
      signal_hold_timer_.start_if_idle(kSignalHoldTick, kSignalHoldTick);
      continue;
    }
    const pid_t pgid = channel_->foreground_group();
    Status st = deliver_signal(pgid, held.signo);
    // From the loop (a timer), never inside signal(): the callback may call back into us.
    if (st) {
      held.done(SignalResult{*held.signal, static_cast<int>(pgid)});
    } else {
      held.done(st.error());
    }
  }
}

// The session is closing: the held signals will never be delivered.
void ShellSession::fail_held_signals() {
  signal_hold_timer_.stop();
  std::vector<HeldSignal> held = std::move(held_signals_);
  held_signals_.clear();
  for (HeldSignal& h : held) {
    if (!h.done) continue;
    deferred_.post([done = std::move(h.done)] {
      done(make_error(Code::SESSION_CLOSING, "PTY session closed before the signal completed"));
    });
  }
}

}  // namespace dshpty::shell
