// One send on a shell session: its output (a bounded head and tail: the viewport and the
// consuming delta), and how far its write got. Shared by the session (which drives it) and the
// BackendSendOperation handed to the service (which reads it), so either may go first.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dshpty/backend.hpp"
#include "screen/keys.hpp"
#include "proc/job_stop.hpp"
#include "text/head_tail_buffer.hpp"
#include "text/job_log.hpp"
#include "text/output_condition.hpp"

namespace dshpty::shell {

class ShellSession;

// Runs `fn` once from `loop`'s next iteration (ev_once), never inside the caller: how a
// send's readers and stops are woken, which may outlive the session that fed them.
void post_to_loop(struct ev_loop* loop, std::function<void()> fn);

struct SendState {
  // The output keeps its first third of viewport_bytes and its newest two thirds: a cut to
  // viewport_bytes (the default cap) then loses nothing a cut of the whole would keep.
  SendState(std::size_t viewport_bytes, std::optional<std::size_t> max_bytes)
      : tail(viewport_bytes / 3, viewport_bytes - viewport_bytes / 3), cap(max_bytes.value_or(viewport_bytes)) {}

  // The echo of a line typed at the idle prompt, while the shell has not said it read the
  // line (its C mark): held aside, and replaced by the line as typed once it has. A line
  // editor draws a line it cannot fit as it can: readline and zle scroll it sideways on a
  // dumb terminal (`<6 word027...`), zle and fish redraw it with cursor moves elsewhere;
  // the shell read what was typed all the same. Without a C (a syntax error, a
  // continuation prompt, the send over first) the held text goes to the output as it was.
  void end_echo(bool line_read) {
    if (!echo_pending) return;
    echo_pending = false;
    if (line_read) {
      append(echo_line);
      append("\n");
    } else {
      append(echo.text());
    }
    echo.clear();
    echo_line.clear();
  }

  // The send's output goes to both: the viewport's and the consuming delta's bounded head
  // and tail, and the log that readers by offset follow (its newest kLogWindow bytes).
  void append(std::string_view text) {
    tail.append(text);
    log.append(text);
  }
  // The unended line now reads `line` (a carriage return redrew it): the tail replaces it,
  // the log, which only grows, gets the redraw as the terminal did ("\r" and the line).
  void rewrite_line(std::string_view line, std::size_t changed_from) {
    tail.rewrite_line(line, changed_from);
    log.append("\r");
    log.append(line);
  }

  text::HeadTailBuffer tail;  // this send's sanitized output, its head and its tail
  static constexpr std::size_t kLogWindow = std::size_t{1} << 20;
  text::JobLog log{kLogWindow};
  // Readers by offset waiting for output past their offset (or the settle): woken from the
  // loop, held weakly so a reader that gave up costs nothing.
  std::vector<std::pair<std::uint64_t, std::weak_ptr<const std::function<void()>>>> output_waiters;
  bool echo_pending = false;  // end_echo: the output is still the shell's echo of echo_line
  std::string echo_line;      // the line typed, printable UTF-8
  text::TailBuffer echo{kEchoBytes};  // the echo as the line editor drew it, while pending
  static constexpr std::size_t kEchoBytes = 64 * 1024;  // more is not an echo: given back
  std::size_t cap;            // the viewport's bound (the request's max_bytes)
  // The viewport is read off the screen (screen/emulator.hpp, result text); a line typed at
  // the prompt and read by the shell stands there for its echo: what the screen showed
  // before the echo, then the line, head the text from where the command's output begins.
  std::string pre_echo;
  std::string viewport_head;
  // A multi-line send typed at the idle prompt (typed_echo.hpp): its line count until the
  // shell's marks decide (0 then), the continuation marks seen, and the line that stood
  // for its echo when it did.
  std::size_t typed_lines = 0;
  std::size_t continuations = 0;
  std::string typed_line;
  std::string bytes;          // what the write sends: the text, then the keys and "\r"
  std::vector<screen::Key> keys;  // encoded when the write starts, in the modes of then
  std::vector<std::string> key_names;  // as the request named them (kept for observers only)
  bool submit = true;             // "\r" after the text and keys
  // What the send writes: nothing (a check-in, a look at what happened since; a cancel that
  // took the text back makes it one), keys alone (C-c, Up, a bare Enter), or text.
  enum class Writes { nothing, keys, text };
  Writes writes = Writes::nothing;
  bool checks_in() const noexcept { return writes == Writes::nothing; }
  std::uint64_t lands_at = 0; // the session's written-byte count once the write landed
  // How far the write got, in order: queued (it starts from the loop), gated (it waits for
  // a reader after a signal: the write gate), writing, landed (every byte reached the
  // terminal; a check-in, which writes nothing, lands at once). Settling is apart: a send
  // settles at any stage.
  enum class Stage { queued, gated, writing, landed };
  Stage stage = Stage::queued;
  bool gated() const noexcept { return stage == Stage::gated; }
  bool write_started() const noexcept { return stage >= Stage::writing; }
  bool landed() const noexcept { return stage == Stage::landed; }
  bool typed_ahead = true;  // written while the shell may not have been reading
  // Typed ahead while another command held the terminal (its group's leader, at the write):
  // if no command start (C) follows, that command read the line (LineState::swallowed).
  std::optional<QueuedBehind> typed_behind;
  // The command it was typed behind, or one that took the terminal before the shell read
  // the line, relays the terminal's input to a far side (ssh, script, a PTY relay: the
  // probe saw it wait on another input it relays). Whatever it read went on to that side,
  // which may have run it: such a line is LineState::relayed, never swallowed, and a cancel
  // takes nothing back from the relay (ShellSession::note_relay).
  std::optional<QueuedBehind> relayed_to;
  // One line written at the shell's own idle prompt (no keys, no line break but the final
  // Enter): the only new prompt that can follow is the one after that line ran, so its
  // marks alone settle it (send_readiness.cpp, check_prompt_readiness).
  bool single_line_at_prompt = false;
  // A cancel under way: asked before the write landed (nothing is written if it had not
  // started; else a SIGINT once it lands), or waiting for the line's own command to start
  // (its C mark: the line was typed behind another command and could not be taken back),
  // or left alone: the line went through a relay (ssh) to a far side whose marks are not
  // seen, where a ^C could hit a command in front of it (SendResult::line_state queued).
  enum class Cancel { none, on_landing, on_command, relayed };
  Cancel cancel = Cancel::none;
  // A cancel took all of the text back from the terminal's input queue before the shell
  // read it (SendResult::taken_back_bytes): the send is a check-in from then on.
  std::uint64_t taken_back = 0;
  bool settled = false;
  // Loop times (ev_now) for the stdin probe's pacing: the send's latest output, and the
  // latest probe (or the landing, before the first).
  double last_output = 0.;
  double last_probe = 0.;
  // A background send's probe interval: doubled up to kProbeSlowest while probes find
  // nothing and no output came, back to kProbeInterval on output (send_readiness.cpp).
  double probe_every = 0.;
  // The latest probe found the foreground relaying the terminal, no reader: a quiet
  // settle's evidence is relay.
  bool relaying = false;
  // The send's condition (SendRequest::until, send_until.cpp): its output regex, fed the
  // stream once the write started; its port, polled while the send is live; what held.
  std::optional<text::OutputCondition> until_output;
  std::string until_pattern;  // its regex, to start it again where the echo needs no skipping
  double until_refilled = 0;  // ev_now when its match budget was last refilled (0: never)
  std::optional<std::uint16_t> until_port;
  double port_since = 0;  // ev_now when the port wait began (the poll backs off with its age)
  // What the condition reads (docs/shell-backend.md, "Conditions"): the stream since
  // the write (no marks tell this line's commands apart), or, where the shell's marks will,
  // only the output of the send's own commands: nothing before its first command start (C:
  // the command in front, the prompt, the echo however the line editor drew it), then what
  // follows each C up to the next mark. The port is not looked at before that first C.
  enum class UntilReads { stream, before_command, command, between_commands };
  UntilReads until_reads = UntilReads::stream;
  char until_last_fed = '\n';  // the last byte fed: a command's unended last line ends with it
  std::optional<SendMatch> match;
  bool background = false;  // SendRequest::background: quiet never settles it
  // A background send's condition answered while the job runs on (matched, or its
  // timeout), and who waits for that answer (BackendSendOperation::when_condition).
  std::optional<ConditionOutcome> condition;
  std::function<void(ConditionOutcome)> on_condition;
  // When the send's write began, in the channel's clock ticks (ProcessChannel::clock_ticks):
  // what a stop counts as the job's own processes started at or after it.
  std::uint64_t started_ticks = 0;
  pid_t started_last_pid = 0;  // the channel's newest pid then (ProcessChannel::newest_pid)
  std::uint64_t started_input = 0;  // its input count then (ProcessChannel::bytes_queued): the line starts here
  // Those, for a stop while its line runs (ProcessChannel::stop_job). A line typed ahead
  // behind a running command starts when that command's line ends (close_open_line moves
  // its start there), not at its write: no input offset says that.
  proc::JobTimes running_times() const {
    return {.started_ticks = started_ticks, .ended_ticks = 0, .last_pid = started_last_pid, .ended_last_pid = 0,
            .input_at = typed_behind ? std::nullopt : std::optional<std::uint64_t>(started_input)};
  }
  // When it settled, in the same ticks, and the session it settled in (empty once that is
  // gone): a stop of the ended job still looks for what it left running (send_job.cpp).
  // A send that settled while its line still ran (its timeout, a match, quiet) has not
  // ended as a job: ended_ticks stays 0 and line_open true until the shell's next prompt
  // (ShellSession::close_open_line), and a stop meanwhile stops it as a running job.
  std::uint64_t ended_ticks = 0;
  pid_t ended_last_pid = 0;  // the channel's newest pid then: what a later command started is newer
  std::uint64_t ended_input = 0;  // the channel's input count then: nothing typed since while it holds
  bool line_open = false;
  std::weak_ptr<ShellSession* const> ended_in;
  // A stop under way (Send::stop), and the callers that wait for it to end.
  std::unique_ptr<proc::StopHandle> stopping;
  std::optional<StopResult> stop_report;  // the processes' part done: waits for the settle
  // A stop's cancel of a line the shell runs itself (`a & wait`) also stops what the line
  // started: true while that JobStop runs; the answer waits for it as for the settle.
  bool stop_procs = false;
  // A stop's cancel of a line the shell held in front before its command started (its C not
  // seen yet): what the line starts is stopped from its C on (ShellSession::on_sanitized).
  bool stop_line_on_start = false;
  // ... and once the line is over (the send settled at its prompt), a last look over its
  // whole window before the answer: what it started after the look above (`a & wait`'s `a`
  // forked after its C) is still its.
  bool stop_line_at_end = false;
  std::vector<Callback<StopResult>> stop_waiters;
  bool waits_for_condition() const noexcept { return until_output.has_value() || until_port.has_value(); }
  bool waits_out_quiet() const noexcept { return background || until_output.has_value() || until_port.has_value(); }
  Callback<SendResult> done;
  struct ev_loop* loop = nullptr;   // where the wake-ups of readers and stops run
  ShellSession* session = nullptr;  // cleared when the session lets go of it (release_send)
};

class ShellSendOperation final : public BackendSendOperation {
 public:
  explicit ShellSendOperation(std::shared_ptr<SendState> state) : state_(std::move(state)) {}
  OutputDelta read_output() override;
  bool cancel() override;
  Result<JobOutput> output(std::uint64_t offset, std::size_t max_bytes) override;
  std::uint64_t output_end() const override { return state_->log.end(); }
  void when_output(std::uint64_t offset, std::weak_ptr<const std::function<void()>> ready) override;
  void when_condition(std::function<void(ConditionOutcome)> done) override;
  Status stop(Callback<StopResult> done) override;
  // The send's bytes all reached the terminal (for tests).
  bool write_landed() const noexcept { return state_->landed(); }

 private:
  std::shared_ptr<SendState> state_;
};

}  // namespace dshpty::shell
