// Sends on a shell session: one write of the text (then the keys, encoded in the terminal's
// modes of the moment, and "\r" when submitting), then completion with the
// first of (docs/shell-backend.md, "Send readiness"):
//   stdin_read     at the shell's own prompt, by its marks (evidence prompt_marks): the last
//                  mark is a prompt end (B) that came after the write landed and nothing
//                  followed it, the shell's group has the terminal, the input queue is
//                  empty, the shell is asleep in its terminal read (where the channel can
//                  prove readers), and a drain after those checks brought nothing new. So
//                  a prompt printed before the shell read this send's input (type-ahead,
//                  the second line of a multi-line send still queued) never settles it,
//                  and output that imitates a prompt cannot (marks carry the nonce).
//                  Or the stdin probe proves the foreground group blocked reading the
//                  terminal (evidence stdin_probe: a program's prompt, `read`, a nested
//                  shell; on a short timer, only once the write landed, and only after a
//                  quiet interval: see on_probe_tick);
//   inferred_idle  no output that grew the screen for the send's idle silence (a redraw of
//                  what shows is no progress: Emulator::take_growth; evidence relay when the latest
//                  probe found the foreground waiting on the terminal as a relay does:
//                  ssh, script, apt's dpkg PTY, a short-timeout poll; never a stdin_read);
//   timeout        the send's deadline, however much output trickles;
//   session_exit   the shell's exit was published (after its output was drained).
// Evidence resets when the write lands: a prompt printed for an earlier send never counts.
//
// Integrity (docs/shell-backend.md, "A result belongs to its send"):
//   write gate     after a signal or a cancel the terminal is in flux (the signalled program
//                  dying or handling it, the shell about to print a prompt). A send started
//                  then holds its write until a reader is seen again: the stdin probe proves
//                  the foreground group blocked reading (it must have run since the signal),
//                  or, where there is no probe, the shell's marks say it is back at its
//                  prompt with its group in the foreground. Bounded by the send's idle time;
//                  then it writes anyway. Output before the write is never this send's.
#include <signal.h>

#include <algorithm>
#include <utility>

#include "shell_session.hpp"
#include "typed_echo.hpp"

namespace dshpty::shell {

namespace {
// While output keeps arriving the probe is put off (see on_probe_tick), but never for
// longer than this: a program that prints on a timer while it polls the terminal (a
// clock, a spinner next to a prompt) must still be seen waiting for input.
constexpr double kProbeBusyInterval = 0.25;

// A line whose echo may stand for itself: printable UTF-8 (no control, no escape), what
// the sanitizer passes through unchanged.
bool printable_line(std::string_view line) {
  if (line.empty()) return false;
  text::Sanitizer sanitizer;
  text::SanitizedText out;
  sanitizer.feed(line, out);
  sanitizer.finish(out);
  return out.text == line && out.markers.empty() && !out.line_controls;
}

// A line typed while another command held the terminal, settled at the shell's next prompt
// with no command start (C) since the write and only the one prompt that command's end
// brought: the command read the line and ended; the shell never saw it. (A line the shell
// read itself starts a command, or brings a second prompt: empty, a comment, refused.)
bool line_swallowed(const SendState& send, const text::PromptWatch& watch) {
  return send.typed_behind && send.landed() && !send.checks_in() && !watch.command_started() &&
         watch.prompts() == 1 && watch.line_state().empty();
}

// Where the shell's echo of a typed line ends in `chunk`: its first command start (C: the
// line was read) or new prompt or line state (P, L: it was not run), if any.
const text::PromptMarker* echo_end(const text::SanitizedText& chunk) {
  for (const text::PromptMarker& mark : chunk.markers) {
    if (mark.kind == 'C' || mark.kind == 'P' || mark.kind == 'L') return &mark;
  }
  return nullptr;
}
// The kernel's canonical line discipline keeps at most this many bytes of a line (N_TTY's
// 4096-byte buffer, one kept for the newline) and drops the rest as they arrive.
constexpr std::size_t kCanonicalLineMax = 4095;

// The longest line of `text` in bytes, with its number (from 1): lines end at LF or CR
// (ICRNL makes CR a newline too).
std::pair<std::size_t, std::size_t> longest_line(std::string_view text) {
  std::size_t longest = 0, at = 0, number = 1, length = 0;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      ++number;
      length = 0;
      continue;
    }
    if (++length > longest) {
      longest = length;
      at = number;
    }
  }
  return {longest, at};
}
}  // namespace

// After foreground_reading() said no: the program in front took the terminal out of line
// mode and relays no other input, so it reads keys itself (vim waiting out its escape
// timeout, a pager drawing): what is typed now is its input, not a line typed ahead of it.
// A relay (script, ssh) passes the line on to whoever is behind it.
bool ShellSession::reads_keys_itself() const {
  const auto modes = channel_->terminal_modes();
  return modes && !modes->canonical && !channel_->foreground_relays_input();
}

bool ShellSendOperation::cancel() {
  if (state_->settled || !state_->session) return false;
  return state_->session->cancel_send(*state_);
}

Result<std::unique_ptr<BackendSendOperation>> ShellSession::start_send(SendRequest request,
                                                                       Callback<SendResult> done) {
  if (phase_ != Phase::running) return make_error(Code::SESSION_CLOSING);
  if (shell_exited() || channel_->output_ended()) return make_error(Code::SESSION_EXITED);
  if (send_) return make_error(Code::SEND_ACTIVE);
  auto timeout = request.timeout.value_or(config_.send_timeout);
  auto idle = request.idle.value_or(config_.idle_silence);
  if (timeout.count() < 0 || idle.count() < 0) {
    return make_error(Code::INVALID_ARGUMENT, "a send's timeout and idle must not be negative");
  }
  auto keys = screen::parse_keys(request.keys);
  if (!keys) return keys.error();
  // A line over the canonical limit typed while a program reads lines (cat, read: the
  // terminal is canonical; a shell's line editor at its prompt reads raw) would lose its
  // tail without a word: refused.
  if (const auto [longest, line] = longest_line(request.text); longest > kCanonicalLineMax) {
    if (auto modes = channel_->terminal_modes(); modes && modes->canonical) {
      return make_error(Code::INVALID_ARGUMENT,
                        "line " + std::to_string(line) + " of the text is " + std::to_string(longest) +
                            " bytes, and the terminal is in canonical mode (a program reads it line by line), "
                            "where the kernel keeps at most " + std::to_string(kCanonicalLineMax) +
                            " bytes of a line and drops the rest: split it into shorter lines, or write it "
                            "to a file from the shell's prompt (its line editor reads raw), e.g. printf '%s' "
                            "'...' > file");
    }
  }
  if (!request.checks_in()) {
    const std::size_t adding = request.text.size() + keys->size() * kKeyBytesBound + (request.submits() ? 1 : 0);
    if (Status st = check_pending_input(adding); !st) return st.error();
  }
  // Without marks nothing says when a settled send's line ended: a later send starts a
  // later command.
  if (params_.mark_nonce.empty() || shell_place_ == ShellPlace::unknown) close_open_line();
  auto send = std::make_shared<SendState>(config_.viewport_bytes, request.max_bytes);
  send->submit = request.submits();
  send->writes = request.checks_in()     ? SendState::Writes::nothing
                 : request.text.empty() ? SendState::Writes::keys
                                        : SendState::Writes::text;
  send->bytes = std::move(request.text);
  send->keys = std::move(*keys);
  if (!observers_.empty()) send->key_names = std::move(request.keys);
  if (Status st = arm_until(*send, request.until); !st) return st.error();
  send->done = std::move(done);
  send->session = this;
  send->loop = loop_;
  send->started_ticks = channel_->clock_ticks();
  send->started_last_pid = channel_->newest_pid();
  send->started_input = channel_->bytes_queued();
  send_ = send;
  if (send->until_port) {
    send->port_since = ev_now(loop_);
    next_port_tick();
  }
  if (auto* l = linger()) l->note_send(true);  // a lingering helper tells the next host whether one was live

  send->background = request.background;
  // A background job has no deadline unless asked for one.
  if (!request.background || request.timeout) send_timeout_timer_.start(timeout);
  // A repeat of 0 would stop the timer for good: an idle of 0 means "at the first chance".
  send_idle_timer_.again(std::max(idle, std::chrono::milliseconds(1)));
  // The write happens from the loop, so a cancel() right after this call can still stop it.
  deferred_.post([this, weak = std::weak_ptr<SendState>(send)] {
    auto s = weak.lock();
    if (!s || s != send_ || s->settled || s->cancel != SendState::Cancel::none) return;
    if (s->checks_in()) {
      begin_check_in(s);
    } else if (aftermath_) {
      hold_write();
    } else {
      begin_write(s);
    }
  });
  return std::unique_ptr<BackendSendOperation>(new ShellSendOperation(std::move(send)));
}

// Whether the shell's marks will tell this send's own commands from what comes before
// them: its line goes to the shell itself, typed at its prompt or typed ahead behind a
// command that does not read the terminal (one that waits on it as a relay does may pass
// the line on: a relay's far side prints no mark seen here). A relay seen before and still
// in front (relayed_to) is one even when a look now finds it busy copying output.
bool ShellSession::marks_tell_commands(const SendState& send) {
  if (params_.mark_nonce.empty() || !shell_pid_ || send.writes != SendState::Writes::text || !send.submit)
    return false;
  if (!send.typed_ahead) return true;
  if (send.typed_behind) return !send.relayed_to && !channel_->foreground_relays();
  return channel_->foreground_group() == *shell_pid_ && prompt_watch_.at_prompt();
}

void ShellSession::hold_write() {
  send_->stage = SendState::Stage::gated;
  prompt_watch_.reset();
  // The first look at once: a signal long past costs one probe.
  if (channel_->proves_readers()) {
    probe_timer_.start(std::chrono::nanoseconds::zero(), kProbeInterval);
  }
}

bool ShellSession::reader_returned() {
  if (channel_->proves_readers()) return channel_->foreground_reading();
  return prompt_watch_.at_prompt() && shell_pid_ &&
         channel_->foreground_group() == *shell_pid_;
}

void ShellSession::open_gate(bool reader_seen) {
  send_->stage = SendState::Stage::queued;
  aftermath_ = false;
  if (!reader_seen) idle_at_prompt_ = false;  // nobody may be reading: treat it as typed ahead
  probe_timer_.stop();
  send_idle_timer_.again();  // the silence is counted from the write
  begin_write(send_);
}

void ShellSession::note_aftermath() {
  aftermath_ = true;
  idle_at_prompt_ = false;
  // Readers blocked now have not handled the signal yet: they count once they ran again.
  channel_->mark_readers();
  if (!send_ || !send_->landed()) prompt_watch_.reset();
}

void ShellSession::begin_write(const std::shared_ptr<SendState>& send) {
  // Typed ahead unless the shell sits at the prompt the previous send ended on: only then
  // is its input read at once, so only then can the queue checks be skipped (they cost a
  // few system calls a send).
  send->typed_ahead = !idle_at_prompt_;
  idle_at_prompt_ = false;
  if (send->typed_ahead) {
    // Whatever the terminal printed before this write is not this send's: take it now,
    // so its prompt cannot be read as one printed after the write.
    channel_->read_available();
    if (send != send_) return;  // the output settled it (the shell exited)
    // Another command holds the terminal, busy (not provably blocked reading it: a REPL at
    // its prompt is typed to, not typed ahead of): the line may be read by it, not by the
    // shell. Where readers cannot be proved nothing is claimed.
    if (send->writes == SendState::Writes::text && send->submit && !params_.mark_nonce.empty() && shell_pid_ &&
        channel_->proves_readers()) {
      // A relay (ssh, script) passes the line on to its far side: relayed, never swallowed.
      const pid_t front = channel_->foreground_group();
      if (front > 0 && front != *shell_pid_ && !channel_->foreground_reading()) {
        note_relay();
        const bool relay = front == relay_group_;
        if (relay || !reads_keys_itself()) {
          send->typed_behind =
              QueuedBehind{static_cast<int>(front), channel_->command_line(front).value_or(std::string())};
          if (relay) send->relayed_to = send->typed_behind;
        }
      }
    }
  }
  if (send->waits_for_condition() && marks_tell_commands(*send)) read_commands_only(*send);
  // No answer to a query waits in front of this write: the reader that asked gets it now
  // (it is blocked in its read), or nobody does (terminal_answers.cpp).
  if (!replies_.empty()) {
    decide_answers(/*last_chance=*/true);
    if (send != send_) return;
  }
  // Keys are encoded now, after the output above: a program that switched to application
  // cursor keys a moment ago gets ESC O A for Up.
  send->single_line_at_prompt = !send->typed_ahead && send->keys.empty() &&
                                 send->bytes.find_first_of("\r\n") == std::string::npos;
  // Its echo is the line as typed, once the shell says it read it (SendState::end_echo).
  if (send->single_line_at_prompt && send->submit && !params_.mark_nonce.empty() &&
      printable_line(send->bytes)) {
    send->echo_pending = true;
    send->echo_line = send->bytes;
    send->echo.clear(pipeline_.current_line_bytes());
    send->pre_echo = emulator_.result_text({}, send->cap).text;
  } else if (!send->typed_ahead && send->keys.empty() && send->submit && !params_.mark_nonce.empty()) {
    if (const std::size_t lines = typed_line_count(send->bytes); lines > 1) {
      send->typed_lines = lines;
      send->pre_echo = emulator_.result_text({}, send->cap).text;
    }
  }
  const std::size_t text_bytes = send->bytes.size();
  if (!send->keys.empty()) send->bytes += emulator_.encode(send->keys);
  if (send->submit) send->bytes.push_back('\r');
  if (!observers_.empty()) note_send(*send, std::string_view(send->bytes).substr(0, text_bytes));
  send->stage = SendState::Stage::writing;
  // The result starts at the session's cursor: what no result has shown yet comes first.
  take_unseen(*send);
  // At the idle prompt the shell is its group's only member: a baseline of it alone (one
  // /proc read instead of the tree's three and the foreground check).
  if (send->single_line_at_prompt && shell_pid_) {
    channel_->mark_shell_reader(*shell_pid_);
  } else {
    channel_->mark_readers();
  }
  channel_->write(send->bytes);
  send->lands_at = channel_->bytes_queued();
  on_write_progress();  // an empty text lands at once
}

void ShellSession::take_unseen(SendState& send) {
  // Both start where the terminal's current line stands: its earlier bytes (a prompt, a
  // program's unended line) were the last result's, or nobody's.
  send.tail.clear(unseen_.line_before());
  send.append(unseen_.text());
  unseen_.clear(pipeline_.current_line_bytes());
}

void ShellSession::begin_check_in(const std::shared_ptr<SendState>& send) {
  // Nothing is written and the prompt evidence is kept: the prompt the last result ended
  // at, or one that came since (the end of a command that ran on), counts now.
  channel_->read_available();
  if (send != send_) return;
  take_unseen(*send);
  send->stage = SendState::Stage::landed;
  idle_at_prompt_ = false;
  if (!observers_.empty()) tell_observers([](SessionObserver& o) { o.on_send(SendNote{.check_in = true}); });
  if (channel_->proves_readers()) {
    send->last_probe = ev_now(loop_);
    // A reader already waiting counts: the first look at once.
    probe_timer_.start(std::chrono::nanoseconds::zero(), kProbeInterval);
  }
  check_prompt_readiness();
}

void ShellSession::on_write_progress() {
  if (send_ && send_->write_started() && !send_->landed() &&
      channel_->bytes_written() >= send_->lands_at) {
    on_write_landed();
  }
}

void ShellSession::on_write_landed() {
  send_->stage = SendState::Stage::landed;
  before_write_ = prompt_watch_;  // a cancel that takes it all back restores it
  prompt_watch_.reset();
  if (channel_->proves_readers()) {
    send_->last_probe = ev_now(loop_);
    probe_timer_.start(kProbeInterval, kProbeInterval);
  }
  if (send_->cancel == SendState::Cancel::on_landing) interrupt_foreground(/*own_command_only=*/send_typed_line());
}

void ShellSession::on_send_output(const text::SanitizedText& chunk) {
  if (send_->gated() || !send_->write_started()) return;  // output of an earlier command
  std::string_view text = chunk.text;
  if (send_->waits_for_condition() && !send_->match) feed_until(chunk);
  if (send_->typed_lines > 0) tell_typed_echo(chunk);
  if (send_->echo_pending) {
    if (const text::PromptMarker* end = echo_end(chunk)) {
      if (end->kind != 'C') send_->echo.append(text.substr(0, end->position));
      const auto output_at = emulator_.command_start();
      if (end->kind == 'C' && output_at && emulator_.on_screen(*output_at)) {
        // The result reads the line as typed, then the screen from the command's output.
        send_->viewport_head = std::move(send_->pre_echo) + send_->echo_line + "\n";
        emulator_.start_text(*output_at);
      }
      send_->end_echo(end->kind == 'C');
      text.remove_prefix(end->position);
    } else if (send_->echo.size() + text.size() > SendState::kEchoBytes) {
      send_->end_echo(false);  // too much for an echo: the output as it came
    } else {
      send_->echo.append(text);
      text = {};
    }
  }
  send_->append(text);
  note_send_output();
  send_->last_output = ev_now(loop_);
  // A job's probe that backed off looks again soon: what prints may be about to read.
  if (send_->probe_every > seconds(kProbeInterval) && probe_timer_.active()) {
    send_->probe_every = 0.;
    probe_timer_.again(kProbeInterval);
  }
  // Only output that grows the screen restarts the silence: a redraw of what shows (watch,
  // a top-like frame, a spinner on its row) is no progress, and a screen that keeps
  // redrawing settles once the idle time passed with nothing but redraws. Output with no
  // text at all (a program's terminal queries, mode switches) still counts as it did.
  if (emulator_.take_growth() || chunk.text.empty()) send_idle_timer_.again();
}

void ShellSession::tell_typed_echo(const text::SanitizedText& chunk) {
  SendState& send = *send_;
  for (const text::PromptMarker& mark : chunk.markers) {
    if (mark.kind == 'L') {
      ++send.continuations;
      continue;
    }
    if (mark.kind != 'C' && mark.kind != 'P') continue;
    // The shell read the lines as one command: one continuation mark after each but the
    // last, then the command's start. Anything else (a prompt: the lines were commands of
    // their own, their output between them) keeps the echo as it was.
    const std::size_t lines = std::exchange(send.typed_lines, 0);
    if (mark.kind != 'C' || send.continuations + 1 != lines) return;
    const auto output_at = emulator_.command_start();
    if (!output_at || !emulator_.on_screen(*output_at)) return;
    const std::string_view typed = std::string_view(send.bytes).substr(0, send.bytes.size() - 1);  // no "\r"
    if (!echoed_as_typed(emulator_.result_text({}, std::string::npos).text, send.pre_echo, typed)) return;
    send.typed_line = typed_line(lines, typed.size());
    send.viewport_head = std::move(send.pre_echo) + send.typed_line + "\n";
    emulator_.start_text(*output_at);
    return;
  }
}

void ShellSession::on_send_chunk_end() {
  if (send_->gated()) {
    // Not this send's output, but it may show the shell back at its prompt.
    if (prompt_watch_.at_prompt() && reader_returned()) open_gate(true);
    return;
  }
  if (send_->match) {
    // The condition held in this chunk: what came with it is in the result (a background
    // send answers its condition and runs on).
    condition_held();
    if (!send_ || send_->match) return;
  }
  if (send_->cancel == SendState::Cancel::on_command && prompt_watch_.command_started()) {
    send_->cancel = SendState::Cancel::none;
    interrupt_foreground(/*own_command_only=*/true);
    if (!send_) return;
  }
  if (send_->landed()) check_prompt_readiness();
}

void ShellSession::on_send_rewrite(std::string_view line, std::size_t changed_from) {
  // A line redrawn after a CR or a backspace reaches the condition only here: the line
  // editor's appends no longer carry the codes that edited it.
  // Only where the condition reads now: the stream, or the send's own command's output.
  using Reads = SendState::UntilReads;
  const bool reads = send_->until_reads == Reads::stream || send_->until_reads == Reads::command;
  if (send_->until_output && !send_->match && !send_->gated() && reads) {
    refill_until(*send_);
    if (auto matched = send_->until_output->rewrite(line)) send_->match = SendMatch{.output = std::move(*matched)};
  }
  if (send_->echo_pending) {
    send_->echo.rewrite_line(line, changed_from);
  } else {
    send_->rewrite_line(line, changed_from);
    note_send_output();
  }
  send_->last_output = ev_now(loop_);
  if (emulator_.take_growth()) send_idle_timer_.again();  // as on_send_output
}

void ShellSession::check_prompt_readiness() {
  // The drain below feeds output back through on_send_chunk_end, which calls here again: the
  // outer call decides, after the drain.
  if (checking_prompt_) return;
  checking_prompt_ = true;
  const auto send = send_;
  for (int round = 0; round < ProcessChannel::kProbeDrainReads && send_ == send; ++round) {
    if (!prompt_watch_.at_prompt() || !shell_pid_) break;
    // A nested shell or a job in the foreground: not the shell's own prompt.
    if (channel_->foreground_group() != *shell_pid_) break;
    // One line typed at the idle prompt: the new prompt after it is its own, whatever the
    // queue says. Else the input may still be queued (type-ahead, a multi-line send), and
    // FIONREAD cannot be trusted alone (it reads 0 right after the shell leaves canonical
    // mode with a line waiting): the shell must also be seen asleep in its read.
    const bool sure = send->single_line_at_prompt;
    if (!sure && input_waiting()) break;
    if (!sure && channel_->proves_readers() && !channel_->foreground_reading()) {
      // At the prompt by the marks, but not yet asleep in its read: the shell may still be
      // taking input it read ahead (fish reads in blocks) or about to block. Soon again.
      prompt_recheck_timer_.start_if_idle(kPromptRecheck);
      break;
    }
    // Whatever the shell printed before it went to sleep is readable now: if none of it
    // is new, the prompt end is the last thing it printed.
    const std::uint64_t seen = text_chunks_;
    channel_->read_available();
    if (send_ != send) break;  // the drain settled it (the shell exited)
    if (text_chunks_ == seen) {
      checking_prompt_ = false;
      settle_send(WaitReason::stdin_read, Evidence::prompt_marks,
                  /*reader_proven=*/channel_->proves_readers());
      return;
    }
  }
  checking_prompt_ = false;
}

void ShellSession::on_prompt_recheck() {
  auto* s = this;
  if (s->send_ && s->send_->landed() && !s->send_->gated()) s->check_prompt_readiness();
}

bool ShellSession::input_waiting() const {
  auto unread = channel_->input_unread();
  return unread && *unread > 0;
}

// A probe looks at /proc (a few reads per process in the session's tree), so it runs only
// when it can matter: while output is still arriving, whoever prints has not settled in a
// read yet (a flood would otherwise pay a probe every tick for nothing), and the prompt
// marker decides the shell's own prompt as it arrives. So the tick is put off until one
// interval after the latest output (at most kProbeBusyInterval since the last probe).
void ShellSession::on_probe_tick() {
  auto* s = this;
  if (!s->send_) return;
  if (s->send_->gated()) {
    if (s->reader_returned()) s->open_gate(true);
    return;
  }
  if (!s->send_->landed()) return;
  const double interval = seconds(kProbeInterval);
  const double now = ev_now(loop_);
  const double quiet = now - s->send_->last_output;
  if (quiet < interval && now - s->send_->last_probe < kProbeBusyInterval) {
    probe_timer_.again(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(interval - quiet)));
    return;
  }
  const auto next = next_probe(*s->send_);
  s->send_->last_probe = now;
  if (probe_timer_.repeat() != next) probe_timer_.again(next);
  // A relay (or a wait that wakes by itself soon: vim waiting out its escape timeout) is
  // no reader: the send settles by quiet output, its evidence says why.
  const bool reading = s->channel_->foreground_reading();
  s->send_->relaying = !reading && s->channel_->foreground_relays();
  s->note_relay();
  if (!reading || s->input_waiting()) return;
  // The reader may have written its last output just before blocking, and we may not have
  // read it yet: take what the master holds first, so the viewport is complete. (A prompt
  // marker in it may settle the send on the way.)
  for (int i = 0; i < ProcessChannel::kProbeDrainReads && s->send_; ++i) {
    if (!s->channel_->read_available()) break;
  }
  if (!s->send_) return;
  // A reader that asked the terminal something gets its answer before the send is judged:
  // it has more to do once it has it.
  if (!s->replies_.empty() && s->decide_answers(false) == AnswerFate::written) return;
  if (!s->send_) return;
  if (s->clear_held_line()) return;  // the new prompt after it settles the send
  const bool at_shell_prompt = s->shell_pid_ && s->prompt_watch_.at_prompt() &&
                               s->channel_->foreground_group() == *s->shell_pid_;
  s->settle_send(WaitReason::stdin_read, at_shell_prompt ? Evidence::prompt_marks : Evidence::stdin_probe,
                 /*reader_proven=*/true);
}

// A job runs as long as it runs, and most of that time nothing changes: each probe that
// follows no output waits twice as long as the last, up to kProbeSlowest; output brings it
// back to kProbeInterval (on_send_output). A foreground send keeps the short interval.
std::chrono::nanoseconds ShellSession::next_probe(SendState& send) const {
  if (!send.background) return kProbeInterval;
  const bool output_since = send.last_output >= send.last_probe;
  const double base = seconds(kProbeInterval);
  send.probe_every = output_since || send.probe_every < base ? base : std::min(2 * send.probe_every, seconds(kProbeSlowest));
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(send.probe_every));
}

void ShellSession::on_send_timeout() {
  // A background send's timeout bounds only the wait for its condition: the job runs on.
  if (send_ && send_->background && send_->waits_for_condition()) return answer_condition(WaitReason::timeout);
  settle_send(WaitReason::timeout);
}

void ShellSession::on_send_idle() {
  auto* s = this;
  // A link being re-established is not silence: the program runs on at the far side and
  // its output waits for the new link. The timer repeats; the send's deadline still holds.
  if (auto* l = s->linger(); l && l->reconnecting()) return;
  if (s->send_ && s->send_->gated()) {
    s->open_gate(false);  // no reader came back within the idle time: write anyway
    return;
  }
  if (s->send_ && s->send_->waits_out_quiet()) {
    // A send with a condition waits for it, not for quiet: a server is quiet while it
    // starts; so does a background one. Quiet is when a condition's unended last line is
    // tried; the next output rearms this.
    send_idle_timer_.stop();
    if (try_quiet_match()) s->condition_held();
    return;
  }
  s->settle_send(WaitReason::inferred_idle);
}

void ShellSession::settle_send(WaitReason reason, Evidence evidence, bool reader_proven) {
  SendResult result;
  if (reason == WaitReason::inferred_idle && send_ && send_->relaying) evidence = Evidence::relay;
  result.evidence = evidence;
  if (reason == WaitReason::stdin_read) {
    // A signal's aftermath ends when a reader is seen blocked: a prompt alone may still be
    // printed from inside the shell's interrupt handling, which can drop a line typed then.
    if (reader_proven || !channel_->proves_readers()) aftermath_ = false;
    if (evidence == Evidence::prompt_marks) {
      // The shell's own prompt: its line editor reads, never a hidden input. The status and
      // the cwd are the shell's own words, from its marks (the cwd from the kernel when the
      // integration could not say it).
      // The status is this send's only if its line started a command after the write; a
      // line typed behind another command may have ended that command's read instead.
      if (!send_ || !send_->typed_behind || prompt_watch_.command_started())
        result.exit_code = prompt_watch_.last_status();
      result.cwd = prompt_watch_.cwd();
      if (!result.cwd) result.cwd = channel_->shell_cwd();
      idle_at_prompt_ = !aftermath_;
    } else {
      result.input_hidden = input_hidden_now();
    }
  }
  if (send_) note_line_state(*send_, reason, result);
  if (reason == WaitReason::matched && send_) result.match = send_->match;
  if (send_) note_relayed_cancel(*send_, result);
  auto send = release_send();
  send->end_echo(false);
  if (send->write_started()) {
    // The screen as it shows, from the session's shown-output cursor; which moves to here.
    text::Cut cut = emulator_.result_text(send->viewport_head, send->cap);
    result.viewport = std::move(cut.text);
    result.truncated = cut.truncated;
    result.omitted_lines = cut.omitted.lines;
    result.omitted_bytes = cut.omitted.bytes;
    result.typed_line = std::move(send->typed_line);
    emulator_.start_text(emulator_.text_cursor());
    if (auto* l = linger()) l->note_shown();
  }
  result.wait_reason = reason;
  result.session_status = status();
  if (emulator_.alternate()) result.screen = emulator_.snapshot();
  note_shown();
  deferred_.post([done = std::move(send->done), result = std::move(result)]() mutable {
    done(std::move(result));
  });
}

void ShellSession::fail_send(Error error) {
  auto send = release_send();
  deferred_.post([done = std::move(send->done), error = std::move(error)] { done(error); });
}

std::shared_ptr<SendState> ShellSession::release_send() {
  send_timeout_timer_.stop();
  send_idle_timer_.stop();
  port_timer_.stop();
  probe_timer_.stop();
  prompt_recheck_timer_.stop();
  // After a signal the baseline is the gate's, kept for the next send.
  if (channel_ && !aftermath_) channel_->forget_readers();
  auto send = std::move(send_);
  if (auto* l = linger(); send && l) l->note_send(false);
  // What comes next is unseen from where the terminal's line stands now (unless the send
  // took none of it: then it still waits from where it began).
  if (send && send->write_started() && unseen_.total_bytes() == 0) unseen_.clear(pipeline_.current_line_bytes());
  if (send) {
    send->settled = true;
    send->session = nullptr;
    send_settled(send);
  }
  return send;
}

// What the result says about a line the shell did not run (SendResult::line_state).
void ShellSession::note_line_state(const SendState& send, WaitReason reason, SendResult& result) {
  result.taken_back_bytes = send.taken_back;
  if (send.taken_back > 0 || params_.mark_nonce.empty() || !shell_pid_) return;
  const std::string& said = prompt_watch_.line_state();
  if (said == "continuation") {
    result.line_state = LineState::continuation;
    return;
  }
  // An earlier line of a multi-line send refused counts too: the lines after it ran alone.
  if (said == "refused" || prompt_watch_.refused_seen()) {
    result.line_state = LineState::refused;
    return;
  }
  if (reason == WaitReason::stdin_read && line_swallowed(send, prompt_watch_)) {
    // A relay read it for its far side, which may have run it (an `exit` there ends it).
    result.line_state = send.relayed_to ? LineState::relayed : LineState::swallowed;
    result.queued_behind = send.relayed_to ? send.relayed_to : send.typed_behind;
    return;
  }
  if (send.writes != SendState::Writes::text || !send.landed() || prompt_watch_.line_taken()) return;
  // Not a relay's line: a relay passes what it reads to its far side, whose prompt it was
  // (relayed, said above and by note_relayed_cancel).
  if (send.typed_behind && !send.relayed_to && result.evidence != Evidence::relay && !input_waiting() &&
      (result.evidence == Evidence::stdin_probe || reason != WaitReason::stdin_read)) {
    // Typed while another command ran busy, and read since by whoever reads now (a program
    // that started after it, the shell's own `read`): not an answer to a prompt the agent
    // saw, and echoed as the terminal echoes type-ahead (a password too). Said as typed
    // ahead, behind that command, though nothing waits any more.
    result.line_state = LineState::queued;
    result.queued_behind = send.typed_behind;
    return;
  }
  const pid_t foreground = channel_->foreground_group();
  if (reason == WaitReason::stdin_read && foreground == *shell_pid_) {
    // The shell reads at its own prompt and took no line since the write: what was typed
    // sits in its line editor (no Enter, or an Enter the editor kept: an open block). Line
    // editors read in non-canonical mode; a builtin `read` of the shell's, in canonical.
    auto modes = channel_->terminal_modes();
    if (modes && !modes->canonical) result.line_state = LineState::kept;
    return;
  }
  if ((reason == WaitReason::inferred_idle || reason == WaitReason::timeout) && input_waiting()) {
    // Typed ahead: the text waits, unread, in the terminal's queue.
    result.line_state = LineState::queued;
    if (foreground > 0 && foreground != *shell_pid_) {
      result.queued_behind = QueuedBehind{static_cast<int>(foreground),
                                          channel_->command_line(foreground).value_or(std::string())};
    }
  }
}

Result<ReadPage> ShellSession::read(const ReadRequest& request) {
  auto page = scrollback_.read(request);
  if (page) note_shown();
  return page;
}

}  // namespace dshpty::shell
