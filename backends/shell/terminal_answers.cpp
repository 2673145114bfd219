// The terminal's answers to queries (cursor position, device attributes, colours): who
// gets them (docs/shell-backend.md, "Terminal answers").
//
// A real terminal types its answer into the input whoever asked, and so would we: `cat` of
// a file holding `ESC [ 6 n` makes the answer the next thing the shell's line editor reads,
// and the next send's line arrives garbled behind it. A query does not say who asked, and
// the asker may be gone by the time its bytes are read. So the answer waits, held here,
// until the terminal's reader is known, and goes only to one that can take it:
//   - a reader is proven blocked on the terminal (the stdin probe: the program that asked
//     writes its query, then waits for the answer), and everything it wrote before it
//     blocked has been read (so the marks are up to date);
//   - the terminal is in non-canonical mode (a program reading its answer sets it; in
//     canonical mode the answer would sit as half a line in front of what is typed next);
//   - and the reader is not the shell at its own prompt (readline and zle read
//     non-canonically too): the shell's group in the foreground and its latest mark not a
//     command start.
// The shell at its own prompt drops the answer at once, and so does a lingering session's
// replay on a take-over (old output: its askers had their answer, or gave up, long ago).
// Anything else waits, looked at on a short backing-off timer, for at most kAnswerBound,
// and a send's write decides at once (answered or dropped), so no answer is ever queued in
// front of a send's bytes.
//
// Where the channel cannot prove readers, the answer goes without that proof when the
// mode and the marks allow it. The facts are the channel's, so the rule holds for a remote
// session as for a local one (a stream channel's facts are those of the far terminal).
#include <algorithm>

#include "shell_session.hpp"

namespace dshpty::shell {

namespace {
// read_available() rounds the drain after a proof may take (each up to 512 KiB).
constexpr int kAnswerDrainReads = 8;
}  // namespace

bool ShellSession::shell_at_own_prompt() const {
  return shell_place_ == ShellPlace::prompt && shell_pid_ && channel_ &&
         channel_->foreground_group() == *shell_pid_;
}

void ShellSession::drop_answers() {
  replies_.clear();
  answer_timer_.stop();
}

void ShellSession::note_answers() {
  if (replies_.empty() || deciding_answers_) return;
  // A take-over's replay (everything before its STARTED) asked its questions long ago.
  const bool replayed = params_.attach && !shell_pid_;
  if (replayed || !channel_ || channel_->output_ended() || shell_at_own_prompt()) {
    drop_answers();
    return;
  }
  if (answer_timer_.active()) return;  // already waiting: the new ones join
  answer_deadline_ = ev_now(loop_) + seconds(kAnswerBound);
  // The first look from the loop, not from inside the channel's read.
  answer_timer_.start(std::chrono::nanoseconds::zero(), kAnswerFirstLook);
}

void ShellSession::on_answer_tick() {
  if (decide_answers(ev_now(loop_) >= answer_deadline_) != AnswerFate::waiting) return;
  // Back off: the asker is usually blocked a moment after its query; one that is not (a
  // program busy before it reads) costs a probe per kProbeInterval, not per millisecond.
  answer_timer_.again(std::min<std::chrono::nanoseconds>(answer_timer_.repeat() * 2, kProbeInterval));
}

ShellSession::AnswerFate ShellSession::decide_answers(bool last_chance) {
  if (replies_.empty()) {
    answer_timer_.stop();
    return AnswerFate::dropped;
  }
  if (deciding_answers_) return AnswerFate::waiting;
  if (!channel_ || channel_->output_ended() || shell_at_own_prompt()) {
    drop_answers();
    return AnswerFate::dropped;
  }
  if (channel_->proves_readers()) {
    if (!channel_->foreground_reading()) {
      if (!last_chance) return AnswerFate::waiting;
      drop_answers();
      return AnswerFate::dropped;
    }
    // The reader is blocked: whatever it (or the shell, on its way back to its prompt)
    // wrote before is readable now. Take it, so the marks below are current.
    deciding_answers_ = true;
    for (int round = 0; round < kAnswerDrainReads && channel_ && channel_->read_available(); ++round) {
    }
    deciding_answers_ = false;
    if (!channel_ || channel_->output_ended() || shell_at_own_prompt()) {
      drop_answers();
      return AnswerFate::dropped;
    }
  }
  auto modes = channel_->terminal_modes();
  if (!modes || modes->canonical) {
    drop_answers();
    return AnswerFate::dropped;
  }
  std::string answers = std::move(replies_);
  drop_answers();
  channel_->write(answers);
  return AnswerFate::written;
}

}  // namespace dshpty::shell
