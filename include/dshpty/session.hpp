// The value types a session speaks in: its status, sends and their results, read pages,
// signals and snapshots. Shared by the service and every backend.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dshpty {

// The top-level PTY process's state; never "the foreground command finished".
struct SessionStatus {
  // lost: a remote session's link ended (its transport exited, EOF, no answer to pings)
  // before its shell's exit was known; `reason` has the transport's own words. The far
  // helper kills the tree when it sees the link go, but the host cannot prove it.
  // reconnecting: a lingering remote session's link ended and the host is restoring it
  // (docs/outlive.md); its processes run on, `reason` says how the link ended. It turns
  // running again, or lost once linger ran out or the far side said the session is gone.
  enum class Kind { running, exited, lost, reconnecting };
  Kind kind = Kind::running;
  std::optional<int> exit_code;  // exited normally: its code
  std::optional<int> signal;     // killed by a signal: its number
  std::string reason{};          // lost, reconnecting: why

  // True while the top-level process runs.
  bool running() const noexcept { return kind == Kind::running; }
  // An exit with a code / by a signal.
  static SessionStatus exited_with_code(int code) { return {Kind::exited, code, std::nullopt}; }
  static SessionStatus exited_by_signal(int signo) { return {Kind::exited, std::nullopt, signo}; }
  static SessionStatus lost(std::string why) { return {Kind::lost, std::nullopt, std::nullopt, std::move(why)}; }
  static SessionStatus reconnecting(std::string why) {
    return {Kind::reconnecting, std::nullopt, std::nullopt, std::move(why)};
  }
  friend bool operator==(const SessionStatus&, const SessionStatus&) = default;
};

// What a reattach brought back (docs/outlive.md): the retained output replayed into the
// session's scrollback and screen, and what is missing.
struct AttachReport {
  std::uint64_t replayed_bytes = 0;  // output replayed from the helper's ring
  std::uint64_t gap_bytes = 0;       // output no host acknowledged that the ring dropped
  // A send was live when the previous host went away: how it ended, in words.
  std::optional<std::string> send_ended{};
};

// What the session's terminal shows now, as its emulator rendered it.
struct ScreenSnapshot {
  unsigned rows = 0;
  unsigned cols = 0;
  // The visible rows, top first: trailing spaces trimmed, trailing blank rows dropped, a
  // wide character once (its second cell adds nothing). UTF-8.
  std::vector<std::string> lines{};
  unsigned cursor_row = 0;  // 0-based, within rows x cols
  unsigned cursor_col = 0;
  bool cursor_visible = true;
  bool alternate = false;  // the alternate screen is shown: a full-screen program draws
  std::string title{};     // as the program set it (OSC 0/2); empty if never set
  friend bool operator==(const ScreenSnapshot&, const ScreenSnapshot&) = default;
};

// Why a send completed. matched: its `until` condition held (SendRequest::until).
enum class WaitReason { stdin_read, inferred_idle, timeout, session_exit, matched };
// "stdin_read", "inferred_idle", "timeout", "session_exit", "matched".
std::string_view wait_reason_name(WaitReason reason) noexcept;

// What settled a send: for a stdin_read the shell's prompt marks (its own prompt, after
// this send's input was read and run) or the stdin probe (a reader proven blocked on the
// terminal: a program's prompt, `read`, a nested shell); for an inferred_idle, relay: the
// output went quiet while the foreground relayed the terminal (ssh, script, apt's dpkg
// PTY, a short-timeout poll of it), which the probe never takes for a reader; whether
// the far side waits for the user is not known. Else nothing.
enum class Evidence { none, prompt_marks, stdin_probe, relay };

// "none", "prompt_marks", "stdin_probe", "relay".
std::string_view evidence_name(Evidence evidence) noexcept;

// A send whose line the shell did not run (docs/shell-backend.md, "A line not run"):
//   continuation  the shell waits for the rest of a command (bash's PS2, zsh's PROMPT2,
//                 fish's open block): what comes next is appended; keys ["C-c"] clear it
//   kept          the text sits in the line editor, not submitted; keys ["C-c"] clear it
//   queued        typed ahead: the text waits in the terminal's input queue behind the
//                 running command (SendResult::queued_behind), and runs when it ends
//   refused       the shell refused the line (fish, a syntax error) and the integration
//                 cleared it: nothing of it ran, nothing of it is left
//   swallowed     typed ahead, and read by the command in front (SendResult::queued_behind),
//                 which then ended: the shell never ran it, and never will
//   relayed       typed while a program that relays the terminal to a far side held it
//                 (ssh, script, a PTY relay: SendResult::queued_behind), and read by it:
//                 whether the far side ran it is not known here (it may have: an `exit`
//                 there ends the relay), so it is never called swallowed; a cancel of it
//                 took nothing back and sent no signal
enum class LineState { continuation, kept, queued, refused, swallowed, relayed };
// "continuation", "kept", "queued", "refused", "swallowed", "relayed".
std::string_view line_state_name(LineState state) noexcept;

// The command a queued line waits behind (or a swallowed line was typed behind, or the
// relay a relayed line went to): the foreground group's leader.
struct QueuedBehind {
  int pid = 0;
  std::string command{};  // its command line, arguments joined by spaces (may be empty)
  friend bool operator==(const QueuedBehind&, const QueuedBehind&) = default;
};

// What a send waits for besides its usual reasons (docs/shell-backend.md, "Conditions"):
// either one settles it as WaitReason::matched. A command that ends first settles as it
// would without it, and a send with a condition never settles inferred_idle (a quiet server
// is still starting).
struct SendUntil {
  // A regex matched against each line of the send's output as it arrives (the echo of the
  // typed text skipped), in time linear in the line: the ECMAScript subset without
  // backreferences or lookaround (docs/shell-backend.md, "Output conditions").
  // INVALID_ARGUMENT naming what was refused.
  std::optional<std::string> output_regex{};
  // A process of the session's tree listens on this TCP port (any address); 1..65535.
  std::optional<int> port{};
  bool any() const noexcept { return output_regex.has_value() || port.has_value(); }
};

// What held when a send settled as WaitReason::matched: the line, or the listener.
struct SendMatch {
  std::optional<std::string> output{};  // the matching line, without its line break
  std::optional<int> port{};
  int pid = 0;                          // with port: the process holding the socket
  std::string address{};                // with port: "127.0.0.1", "::", ...
  friend bool operator==(const SendMatch&, const SendMatch&) = default;
};

struct SendRequest {
  // Default initializers on every member keep {.text = "ls"} -Wextra clean on g++ 12.
  std::string text{};
  // Named keys typed after the text ("Enter", "Up", "C-c", "F5", "y": tmux's vocabulary,
  // docs/shell-backend.md), encoded in the terminal's modes when they are written. An
  // unknown name fails the send before anything is written.
  std::vector<std::string> keys{};
  // Enter after the text and keys. Unset: yes when there is text. No text, no keys and no
  // submit is a check-in: nothing is written, and it completes at once when the shell is
  // at its prompt (or a reader already waits), else as a send does; its viewport holds what
  // arrived since the last result.
  std::optional<bool> submit{};
  std::optional<std::chrono::milliseconds> timeout{};  // backend default when unset
  std::optional<std::chrono::milliseconds> idle{};     // silence that completes as inferred_idle
  // The result's viewport in at most this many bytes: when the output is longer, its head
  // and tail are kept (the tail favoured) with the line "[output truncated: N lines, M
  // bytes left out]" between them. Unset: the backend's own bound.
  std::optional<std::size_t> max_bytes{};
  SendUntil until{};
  // A background send (a job): it never settles inferred_idle (a quiet server still runs)
  // and has no deadline unless `timeout` is set; it ends at the prompt, by its condition,
  // at the session's exit, or when cancelled. The host simply does not wait for it.
  bool background = false;

  bool submits() const noexcept { return submit.value_or(!text.empty()); }
  bool checks_in() const noexcept { return text.empty() && keys.empty() && !submits(); }
};

struct SendResult {
  // This send's output, sanitized; when longer than the request's max_bytes (or the
  // backend's bound), its head and tail with the truncation marker line between them.
  std::string viewport;
  WaitReason wait_reason = WaitReason::inferred_idle;
  SessionStatus session_status;
  bool truncated = false;  // the viewport left part of the output out (the marker says so)
  std::uint64_t omitted_lines = 0;  // when truncated: the newlines left out
  std::uint64_t omitted_bytes = 0;  // when truncated: the bytes left out
  // A multi-line send's echo told in one line ("[typed N lines, M bytes]", in the viewport
  // where the echo stood; docs/shell-backend.md), or empty: a text face spares that line.
  std::string typed_line;
  // When the send ended at the shell's own prompt (stdin_read, the shell's group holding
  // the terminal): the exit status of the command before that prompt, and the shell's
  // working directory (where the backend can tell). nullopt otherwise: a job still
  // running, a program's own prompt, idle, timeout, exit.
  std::optional<int> exit_code;
  std::optional<std::string> cwd;
  // stdin_read with the reader's terminal echo off in canonical mode: a password prompt
  // (getpass, sudo, ssh, read -s). A host can ask a person for the secret instead.
  bool input_hidden = false;
  // The screen, when the send completed with the terminal on the alternate screen (a
  // full-screen program: its viewport is what it drew, not a line stream).
  std::optional<ScreenSnapshot> screen{};
  // Which evidence settled it (none unless wait_reason is stdin_read).
  Evidence evidence = Evidence::none;
  // A cancel took the send's text back before the shell read it: the bytes removed from
  // the terminal's input queue. Then no signal was sent. 0 otherwise.
  std::uint64_t taken_back_bytes = 0;
  // The shell did not run the send's line (LineState); nullopt when it did, or nothing
  // says otherwise. queued_behind is set with LineState::queued (and ::swallowed,
  // ::relayed) when the command is known.
  std::optional<LineState> line_state{};
  std::optional<QueuedBehind> queued_behind{};
  // WaitReason::matched: what held.
  std::optional<SendMatch> match{};
};

// A background send's condition (SendRequest::until) answered while its job runs on:
// matched (with what held), or timeout (the request's timeout bounds only this wait).
struct ConditionOutcome {
  WaitReason reason = WaitReason::matched;
  std::optional<SendMatch> match{};
};

// A send's output read by byte offset (Send::output): any number of readers, each with its
// own offset; none of them moves the send's consuming cursor (read_output()).
struct JobOutput {
  std::string text;                  // whole UTF-8 characters, sanitized
  std::uint64_t next_offset = 0;     // where the next read starts
  std::uint64_t dropped_bytes = 0;   // bytes past `offset` the retained window no longer had
  bool done = false;                 // the send had settled when this was read
};

// A process a stop could not end, and why ("uninterruptible sleep (D)", "alive after
// SIGKILL", "signal refused: ...").
struct StopRemaining {
  int pid = 0;
  std::string command{};
  std::string why{};
};

// What stopping a send's job did (Send::stop).
struct StopResult {
  bool stopped = false;                   // every process of the job is gone and the send settled
  std::vector<std::string> signals{};     // sent, in order: "SIGINT", "SIGTERM", "SIGKILL"
  std::vector<StopRemaining> remaining{}; // empty when stopped
  // The job's command had not started (its text typed ahead behind a command still
  // running): the bytes taken back from the input queue; then nothing of it ran and no
  // signal was sent. 0 otherwise.
  std::uint64_t taken_back_bytes = 0;
};

// Output of a live send since the previous read_output().
struct OutputDelta {
  std::string text;
  bool truncated = false;  // output was dropped between the two reads
  std::uint64_t dropped_bytes = 0;  // how much: the bytes between the two reads not in `text`
};

// A page of retained output, counted in lines back from the newest.
struct ReadRequest {
  std::int64_t offset = 0;   // lines back from the newest; must be >= 0
  std::int64_t count = 500;  // must be >= 1
};

struct ReadPage {
  std::string text;
  std::int64_t total_lines = 0;
  std::int64_t line_begin = 0;  // first line of the page, counted from the oldest retained
  std::int64_t line_end = 0;    // one past its last line
  bool truncated = false;       // the page was cut to its byte bound
};

// The signals a caller may send to a session's foreground process group.
enum class Signal { sigint, sigterm, sigkill, sigtstp, sighup };
// "SIGINT", ...
std::string_view signal_name(Signal signal) noexcept;
// The POSIX number (SIGINT, ...).
int signal_number(Signal signal) noexcept;
// "SIGINT" or "INT" (any case) to a Signal; nullopt for anything outside the set.
std::optional<Signal> parse_signal(std::string_view name) noexcept;
// "SIGKILL" for 9 and so on for any signal number; "SIG<n>" when it has no name.
std::string signal_number_name(int signo);

struct SignalResult {
  Signal signal = Signal::sigint;
  int target_pgid = 0;  // the process group it was delivered to
};

// What confines a session (docs/security.md), fixed for its life.
struct Confinement {
  std::string mode;                           // "read-only" or "workspace-write"
  bool network = false;                       // false: a private network namespace
  std::vector<std::string> writable_roots;    // canonical paths; empty in read-only
  std::vector<std::string> protected_paths;   // read-only inside the writable roots
};

// Per-session resource limits (docs/security.md, "Resource limits"), enforced by a
// cgroup of the session's own. Unset: no limit of that kind (or the operator's default).
struct Limits {
  std::optional<std::uint64_t> pids{};    // processes and threads of the session's tree
  std::optional<std::uint64_t> memory{};  // bytes, the tree's total (RAM, and swap where counted)
  std::optional<double> cpu{};            // CPUs' worth of time (0.5: half of one CPU's)
  bool any() const noexcept { return pids || memory || cpu; }
  friend bool operator==(const Limits&, const Limits&) = default;
};

// Which limit a session reached.
enum class LimitKind { pids, memory };
// "pids", "memory".
std::string_view limit_kind_name(LimitKind kind) noexcept;

// A limit the session reached (the newest; it stays for the session's life). pids: a fork
// was refused. memory: the kernel's OOM killer ended a process of the session; `pid` and
// `command` name it when they can be known.
struct LimitHit {
  LimitKind kind = LimitKind::pids;
  std::optional<int> pid{};
  std::optional<std::string> command{};
  friend bool operator==(const LimitHit&, const LimitHit&) = default;
};

// What an observer sees of a session (docs/watch.md): the screen as the session's emulator
// holds it, and what runs, read without touching the terminal (no read, no write, no
// resize, no signal), so watching never changes a send's result or its timing.
enum class ObservedActivity { unknown, prompt, busy };
// "unknown", "prompt", "busy".
std::string_view observed_activity_name(ObservedActivity activity) noexcept;
// A session's recording (ShellConfig::record_dir; docs/watch.md, "Recordings"): an
// asciicast v2 file written as the session runs.
enum class RecordingState {
  recording,  // being written
  cut,        // record_max_bytes reached: the file ends with a marker saying so
  failed,     // a write failed (a full disk): the file ends where it stopped; `error` says why
  closed,     // the session ended and the file is complete
};
// "recording", "cut", "failed", "closed".
std::string_view recording_state_name(RecordingState state) noexcept;

struct Recording {
  std::string path;
  RecordingState state = RecordingState::recording;
  std::uint64_t bytes = 0;            // written to the file so far
  std::optional<std::string> error{};  // failed: the cause
  friend bool operator==(const Recording&, const Recording&) = default;
};
// What a session runs now (SessionSnapshot::activity), read when the snapshot is taken.
struct ListeningPort {
  int port = 0;
  std::string address{};  // "127.0.0.1", "::", ...
  int pid = 0;            // the process holding the socket
  std::string command{};  // its command name
};
struct Activity {
  // prompt: the shell waits at its own prompt; busy: a command runs; unknown: nothing says.
  enum class State { prompt, busy, unknown };
  State state = State::unknown;
  // When busy: the command line as typed (the live send's text, else the foreground's
  // command line), how long it has run, and how many processes the session's tree holds
  // besides its shell.
  std::optional<std::string> command{};
  std::optional<std::int64_t> elapsed_ms{};
  std::optional<std::size_t> processes{};
  std::vector<ListeningPort> listening{};  // TCP ports the session's processes listen on
};
// "prompt", "busy", "unknown".
std::string_view activity_state_name(Activity::State state) noexcept;

// What a caller sees of one published session, fresh at the time it was taken.
struct SessionSnapshot {
  std::string id;
  std::optional<std::string> name;
  std::string type;
  std::optional<int> pid;  // only where the backend has one
  SessionStatus status;
  std::optional<Confinement> confinement;  // absent: unconfined
  std::optional<LimitHit> limit_hit{};     // absent: no limit reached (or none set)
  std::optional<Recording> recording{};    // absent: not recorded
  std::optional<Activity> activity{};      // absent: the backend cannot say
};

// One observation (Service::observe): the session as list() shows it, whose it is, and
// what its terminal shows now.
struct Observation {
  SessionSnapshot session{};
  std::string owner{};       // the owner's label (display only, never authority)
  bool send_live = false;    // an owner's send is live on the session
  ScreenSnapshot screen{};
  ObservedActivity activity = ObservedActivity::unknown;
  // busy: the foreground job's command line (arguments joined by spaces), when known. Never
  // what a send typed: that may be a password.
  std::optional<std::string> command{};
};

}  // namespace dshpty
