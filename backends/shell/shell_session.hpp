// One shell session: its phases (starting, running, tearing down, closed) and its sends'
// readiness, over two seams. Where the processes live is the process channel's business
// (process_channel.hpp; the local one is a PTY plus a dshpty-supervisor helper);
// what the output means is the output sinks' (text/output_sink.hpp: scrollback, motd, and
// this session itself as the sink that watches for prompts). The session touches no fd,
// no pid and no /proc itself.
//
// The channel reports three events, never inferred from one another: the shell exited,
// the output ended, the tree is quiescent. status() turns `exited` only once the output
// ended (or drain_timeout passed after the exit, when a background process still holds the
// terminal), so every byte the shell wrote before exiting is delivered before anyone sees
// the exit.
//
// Teardown (a failed start-up, or close): ask the channel to kill the tree, wait for
// quiescence (bounded by close_grace + kQuiesceSlack), then for the output to end (bounded
// by drain_timeout: a process outside the tree holding the terminal is reported as a
// failure, not waited for). Success releases the channel; failure clears the close fence
// so a later close retries.
#pragma once

#include <ev.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/backend.hpp"
#include "dshpty/loop.hpp"
#include "dshpty/shell.hpp"
#include "process_channel.hpp"
#include "sandbox/sandbox.hpp"
#include "loop/timer.hpp"
#include "limits/cgroup_location.hpp"
#include "screen/emulator.hpp"
#include "record/recorder.hpp"
#include "send_state.hpp"
#include "session_observer.hpp"
#include "text/motd_capture.hpp"
#include "text/output_sink.hpp"
#include "text/prompt_watch.hpp"
#include "text/scrollback.hpp"
#include "text/tail_buffer.hpp"

namespace dshpty::shell {

// What ShellBackend resolved and checked before a session starts.
struct StartParams {
  std::string session_id;
  std::vector<std::string> argv;
  std::optional<std::string> cwd;
  unsigned rows = 40;
  unsigned cols = 160;
  std::vector<std::string> env;  // "NAME=value", already scrubbed and set
  std::string supervisor_path;
  SandboxSpec sandbox;  // checked; mode none runs the helper directly
  // Where the helper makes the session's cgroups (empty: no limits). Its fds close once
  // the helper has its copies.
  limits::Placement cgroup;
  // The shell integration's nonce (dialect/dialect.hpp): only marks carrying it count.
  // Empty for a raw start (no integration): readiness by the stdin probe alone.
  std::string mark_nonce;
  // fish: its abandoned-line marks become newlines in the text (text/abandoned_line_filter.hpp).
  bool abandoned_lines = false;
  // Said after the shell's name when its start-up fails (" (rc: user)").
  std::string startup_words;
  AbortSignal signal;
  // Opens the session's channel: where its processes live is the backend's choice (a
  // local helper, a far one over a transport, a lingering one's rendezvous).
  ChannelFactory open_channel;
  // Taking over a lingering session (docs/outlive.md): its shell runs already, so the start
  // waits for the replay and STARTED, not for a prompt.
  bool attach = false;
  // The session's recording (record/record_plan.hpp), or null: the session's first observer.
  std::unique_ptr<record::Recorder> recorder;
  // Set by the backend when its host is leaving: a close of a lingering session then
  // detaches it (the helper waits for the next host) instead of killing its tree.
  std::shared_ptr<const bool> host_leaving;
};

class ShellSession final : public BackendSession,
                           private ChannelEvents,
                           private text::OutputSink {
 public:
  // Starts a session; `done` gets it once the shell's first prompt appeared, or an error
  // once everything it started is gone (make_backend_cleanup_error when that failed too).
  // `done` runs from the loop.
  static void start(struct ev_loop* loop, const ShellConfig& config, StartParams params,
                    SpawnCallback done);

  ~ShellSession() override;
  ShellSession(const ShellSession&) = delete;
  ShellSession& operator=(const ShellSession&) = delete;

  const std::string& motd() const override { return motd_.text(); }
  std::optional<int> pid() const override;
  SessionStatus status() const override;
  Result<std::unique_ptr<BackendSendOperation>> start_send(SendRequest request,
                                                           Callback<SendResult> done) override;
  Result<ReadPage> read(const ReadRequest& request) override;
  Status signal(Signal signal, Callback<SignalResult> done) override;
  void close(std::string reason, Callback<void> done) override;
  // The emulator's grid, after whatever the terminal has written by now.
  Result<ScreenSnapshot> screen() override;
  // INVALID_ARGUMENT outside 1..4096; SESSION_CLOSING while closing; SESSION_EXITED once
  // the terminal is gone.
  Status resize(unsigned rows, unsigned cols) override;
  // The observer's view (BackendSession::observe): the grid as the emulator holds it and
  // what the foreground runs; no drain. ShellConfig::watchable false: INVALID_ARGUMENT.
  Result<Observation> observe() const override;
  std::optional<AttachReport> attach_report() const override {
    return linger() ? linger()->attach_report() : std::nullopt;
  }
  std::optional<Confinement> confinement() const override { return describe_confinement(params_.sandbox); }
  std::optional<LimitHit> limit_hit() const override { return channel_ ? channel_->limit_hit() : std::nullopt; }
  std::optional<Recording> recording() const override {
    return recorder_ ? std::optional<Recording>(recorder_->state()) : std::nullopt;
  }

  // Observers (session_observer.hpp): read-only taps on output, input, sends and resizes,
  // told on_session_end when the session is over for this host. An observer outlives its
  // registration; remove_observer is safe from inside a notification.
  void add_observer(SessionObserver& observer);
  void remove_observer(SessionObserver& observer);
  // At the prompt or busy (the latest mark), with the command and its processes and ports
  // (send_job.cpp).
  std::optional<Activity> activity() const override;

  // Shell-specific.
  // Queues raw bytes for the terminal (written as the master accepts them).
  // INVALID_ARGUMENT past kMaxPendingInputBytes of unwritten input.
  Status write(std::string_view bytes);

  // The three events, for tests and diagnostics.
  bool shell_exited() const noexcept { return shell_exit_ != ShellExit::running; }
  bool output_ended() const { return channel_ && channel_->output_ended(); }
  bool quiescent() const { return channel_ && channel_->quiescent(); }
  pid_t helper_pid() const noexcept { return helper_pid_; }
  const std::string& id() const noexcept { return session_id_; }
  // Retained output: the scrollback's bytes, and what the text layer holds in all (the
  // scrollback and the live send's tail), for the memory-bound tests.
  std::size_t retained_bytes() const noexcept { return scrollback_.retained_bytes(); }
  std::size_t text_memory_bytes() const noexcept {
    return scrollback_.memory_bytes() + (send_ ? send_->tail.memory_bytes() : 0);
  }
  std::size_t screen_memory_bytes() const noexcept { return emulator_.memory_bytes(); }
  // How often the stdin probe looks now (0 when it does not run), for the pacing tests.
  std::chrono::nanoseconds probe_every() const {
    return probe_timer_.active() ? probe_timer_.repeat() : std::chrono::nanoseconds::zero();
  }
  // Input queued for the terminal and not written yet (at most kMaxPendingInputBytes).
  std::uint64_t pending_input_bytes() const {
    return channel_ ? channel_->bytes_queued() - channel_->bytes_written() : 0;
  }

  // Input queued for the terminal and not yet written (the program does not read): a send
  // or write that would leave more than this unwritten is refused (INVALID_ARGUMENT), so a
  // program that never reads cannot make the host hold its input without bound. Keys are
  // counted at kKeyBytesBound each (the longest key an encoding gives is 7).
  static constexpr std::size_t kMaxPendingInputBytes = std::size_t{1} << 20;
  static constexpr std::size_t kKeyBytesBound = 8;

  // How often the stdin probe looks at /proc while a send's write has landed.
  static constexpr std::chrono::milliseconds kProbeInterval{20};
  // The longest a background send's probe backs off to while nothing changes.
  static constexpr std::chrono::milliseconds kProbeSlowest{1000};

  // How long past close_grace the helper may take to report quiescence before a close
  // fails (a wedged or stopped helper).
  static constexpr std::chrono::milliseconds kQuiesceSlack{10'000};

 private:
  enum class Phase { starting, running, tearing_down, closed };

  ShellSession(struct ev_loop* loop, const ShellConfig& config, StartParams params);
  Status launch();

  // The channel's events (ChannelEvents).
  void on_started(pid_t shell_pid) override;
  void on_start_failed(Error cause) override;
  void on_output(std::string_view bytes) override;
  void on_output_ended() override;
  void on_write_progress() override;
  void on_exited(SessionStatus status) override;
  void on_quiescent() override;
  void on_lost(Error cause) override;
  void on_taken_back(std::size_t own, std::size_t taken) override;
  void on_port_seen() override { on_port_tick(); }

  // The terminal's answers to queries (terminal_answers.cpp): what the emulator answered
  // is held until its reader is known. It goes to a reader proven blocked on the terminal
  // in non-canonical mode that is not the shell at its own prompt; anything else drops it.
  enum class AnswerFate { waiting, dropped, written };
  void note_answers();  // after a read's bytes have gone through every sink
  AnswerFate decide_answers(bool last_chance);
  void drop_answers();
  bool shell_at_own_prompt() const;
  void on_answer_tick();

  // The last output sink (OutputSink): the raw-output hook, prompt evidence, the live send.
  void on_bytes(std::string_view raw) override;
  void on_sanitized(const text::SanitizedText& chunk) override;
  void on_text(const text::SanitizedText& chunk) override;
  void on_line_rewrite(std::string_view line, std::size_t changed_from) override;
  void on_chunk_end() override;

  void publish_exit();
  void on_exit_publish_timeout();

  // Observers (session_observer.cpp).
  template <class Tell>
  void tell_observers(Tell tell);
  // Whether input written now goes to a reader with echo off (a password prompt).
  bool input_hidden_now() const;
  // Whether the foreground relays the terminal's input to a far side (session_observer.cpp),
  // and so what observers may show of input written now.
  bool input_relayed_now();
  InputShown input_shown_now();
  void note_input(std::string_view bytes);
  void note_send(const SendState& send, std::string_view text);
  // Output a caller is about to be shown (a result, a job's output by offset or cursor, a
  // page of the scrollback, the screen): observers are told (on_shown), so a recording has
  // it in its file before the answer goes out.
  void note_shown();
  void end_observers();

  // Sends (send_readiness.cpp).
  friend class ShellSendOperation;
  void hold_write();
  bool reader_returned();
  void open_gate(bool reader_seen);
  void note_aftermath();
  bool input_waiting() const;
  // INVALID_ARGUMENT when `adding` more bytes would leave over kMaxPendingInputBytes unwritten.
  Status check_pending_input(std::size_t adding) const;
  void begin_write(const std::shared_ptr<SendState>& send);
  void begin_check_in(const std::shared_ptr<SendState>& send);
  void take_unseen(SendState& send);
  void on_write_landed();
  void on_send_output(const text::SanitizedText& chunk);
  void on_send_chunk_end();
  // A multi-line send's marks: its echo told in one line when the shell read it whole.
  void tell_typed_echo(const text::SanitizedText& chunk);
  void on_send_rewrite(std::string_view line, std::size_t changed_from);
  void check_prompt_readiness();
  void on_prompt_recheck();
  // `evidence` prompt_marks: stdin_read at the shell's own prompt (its group in the
  // foreground), which gives the result its exit_code and cwd.
  // `reader_proven`: the stdin probe saw the reader blocked (ends a signal's aftermath).
  void settle_send(WaitReason reason, Evidence evidence = Evidence::none, bool reader_proven = false);
  // Start-up without the integration (a raw argv): the shell seen reading is its prompt.
  void on_startup_probe();
  void end_startup_probe();
  void fail_send(Error error);
  // Stops the live send's timers and lets go of it (its operation may outlive us).
  std::shared_ptr<SendState> release_send();
  bool cancel_send(SendState& send);
  bool take_back(SendState& send);
  void note_taken_back(SendState& send);
  bool shell_owns_terminal() const;
  bool reads_keys_itself() const;
  bool clear_held_line();
  void note_relayed_cancel(const SendState& send, SendResult& result);
  // Relays in front (send_cancel.cpp): note_relay after a look of the stdin probe,
  // relay_holds_line before a cancel touches the terminal's input queue.
  void note_relay();
  bool relay_holds_line(SendState& send);
  void interrupt_foreground(bool own_command_only = false);
  void note_line_state(const SendState& send, WaitReason reason, SendResult& result);

  // Signals (signal_hold.cpp). Right after a send's write the shell still has the terminal:
  // it is reading the line, running a builtin of it, or starting its job. A signal sent to
  // its group then is the shell's, not the command's (bash takes SIGINT while it forks a job,
  // and the job runs on; readline drops a line it has not finished reading). So a signal is
  // held until the command's own group has the terminal, or the shell is seen reading again
  // (a builtin that reads, or the command already over), or kSignalHold passed (a builtin
  // loop): then it goes to whichever group is in the foreground.
  struct HeldSignal {
    int signo = 0;
    std::optional<Signal> signal;       // a caller's signal(); nullopt for a cancel's SIGINT
    Callback<SignalResult> done;        // a caller's signal() only
    std::shared_ptr<SendState> send;    // a cancel: its send (moot once settled)
    ev_tstamp deadline = 0;
    // A cancel of a typed line: only the send's own command is interrupted (its C mark came
    // since the write), or the shell itself while it holds the line (at the deadline, its
    // group in front); never a command the line was typed ahead of.
    bool own_command_only = false;
    // A cancel's SIGINT already sent to group `sent_to`: looked at each tick while what
    // became of it is unsettled (ProcessChannel::signal_fate), or it missed (the
    // command had exited, or was exiting, the shell not yet past it) and goes to the line's
    // next command once another group is in front, until the deadline (counted from the
    // miss).
    enum class Sent { not_yet, unsettled, missed };
    Sent sent = Sent::not_yet;
    pid_t sent_to = 0;
  };
  static constexpr std::chrono::milliseconds kSignalHold{500};
  static constexpr std::chrono::milliseconds kSignalHoldTick{1};
  bool shell_starting_command();
  bool send_typed_line() const;
  void hold_signal(HeldSignal held);
  void release_held_signals();
  Status deliver_signal(pid_t pgid, int signo);
  void fail_held_signals();
  // Conditions (send_until.cpp): arms the request's `until` on `send` (INVALID_ARGUMENT for
  // a bad regex or port, BACKEND_FAILED where the channel cannot see ports), feeds it the
  // send's stream, tries its unended line when output went quiet, polls its port.
  Status arm_until(SendState& send, const SendUntil& until);
  void feed_until(const text::SanitizedText& chunk);
  // The condition reads only the send's own commands' output, told apart by the marks.
  void read_commands_only(SendState& send);
  // The condition's match budget grows with the time since its last refill.
  void refill_until(SendState& send);
  bool marks_tell_commands(const SendState& send);
  std::chrono::nanoseconds next_probe(SendState& send) const;
  bool try_quiet_match();
  void on_port_tick();
  void next_port_tick();  // the poll's next look (proc/port_poll.hpp), or a renewal
  // The condition held: a foreground send settles matched; a background one answers its
  // condition's waiter (answer_condition) and runs on.
  void condition_held();
  void answer_condition(WaitReason reason);
  // Jobs (send_job.cpp): readers by offset woken as output comes and when the send
  // settles; a stop's processes part run by the channel, its answer once the send settled.
  void note_send_output();
  void send_settled(const std::shared_ptr<SendState>& settled);
  Status stop_send(const std::shared_ptr<SendState>& send, Callback<StopResult> done);
  void stop_through_relay(const std::shared_ptr<SendState>& send, Callback<StopResult> done);
  // `at_end`: the line is over (its send settled): a last look over its whole window.
  void stop_line_processes(const std::shared_ptr<SendState>& send, bool at_end = false);
  Status stop_ended(const std::shared_ptr<SendState>& send, Callback<StopResult> done);
  void end_as_job(SendState& send);
  // A send that settled while its line still ran (a timeout, a match, quiet): its window
  // ends at the shell's next prompt after it (no marks: the next send), not at its settle.
  bool line_still_runs(const SendState& send) const;
  void close_open_line();
  void on_stop_settle_timeout();
  void on_send_timeout();
  void on_send_idle();
  void on_probe_tick();

  // Start-up.
  void on_startup_timeout();
  void try_finish_start();
  void fail_start(Error error);
  // The one end of a spawn, from the loop: the session to `done`, or (error) the error
  // once the session is destroyed.
  void complete_spawn(Error error);
  // The channel's lingering facet, or null.
  LingerFacet* linger() const { return channel_ ? channel_->linger() : nullptr; }

  // Teardown.
  void on_quiesce_timeout();
  void on_drain_timeout();
  void begin_teardown();
  void check_teardown();
  void finish_teardown(Error error);
  void stop_timers();

  struct ev_loop* loop_;
  ShellConfig config_;
  StartParams params_;
  Deferred deferred_;
  Phase phase_ = Phase::starting;

  std::unique_ptr<ProcessChannel> channel_;
  pid_t helper_pid_ = -1;
  Timer startup_timer_;
  Timer startup_probe_timer_;  // no integration: the shell seen reading is its prompt
  Timer exit_publish_timer_;
  Timer quiesce_timer_;
  Timer drain_timer_;

  std::string session_id_;
  std::optional<pid_t> shell_pid_;
  // The shell's exit: the channel reported it (shell_status_ holds how), then status()
  // says it (published: once the output ended, or drain_timeout after the exit).
  enum class ShellExit { running, exited, published };
  ShellExit shell_exit_ = ShellExit::running;
  SessionStatus shell_status_;
  Error lost_;  // the channel ended without proving the tree gone
  std::string lost_reason_;  // a remote link's end, in the transport's words (status lost)
  // The helper missed the quiescence bound and the channel ended the tree itself: the close
  // that waited reports it (once; a later close finds the tree gone and succeeds).
  std::optional<std::string> forced_end_;

  // The output, in the order the sinks are fed: scrollback, motd, the emulator (so a send
  // settled by this read sees the screen it drew), then this session.
  text::OutputPipeline pipeline_;
  text::Scrollback scrollback_;
  text::MotdCapture motd_;
  screen::Emulator emulator_;
  std::string replies_;  // the emulator's answers, not decided yet
  // Where the shell is by its latest mark (kept across sends, unlike prompt_watch_): after
  // C a command runs; after any other mark it is at (or printing) its prompt.
  enum class ShellPlace { unknown, prompt, command };
  ShellPlace shell_place_ = ShellPlace::unknown;
  double command_since_ = 0.;  // ev_now when the shell_place_ turned command
  // Pending answers wait for their reader at most this long (then they are dropped),
  // looked at on a timer that backs off from kAnswerFirstLook to kProbeInterval.
  static constexpr std::chrono::milliseconds kAnswerBound{2'000};
  static constexpr std::chrono::milliseconds kAnswerFirstLook{1};
  static constexpr std::size_t kMaxHeldAnswers = 4096;  // more is dropped
  Timer answer_timer_;
  double answer_deadline_ = 0.;
  bool deciding_answers_ = false;  // inside decide_answers (its drain re-enters)
  text::PromptWatch prompt_watch_;
  text::PromptWatch before_write_;  // the watch as the live send's write landed
  // Output bytes fed so far, and on a take-over how many of the replay the previous host's
  // results had shown (until the replay reaches them): the text's start goes there.
  std::uint64_t fed_ = 0;
  std::optional<std::uint64_t> replay_shown_;
  // Where the text results show starts: unknown until a take-over's first output asked the
  // channel; at the first prompt (a new session, or a replay with no offset); in the replay.
  enum class TextStart { unknown, first_prompt, replay };
  TextStart text_start_ = TextStart::unknown;

  // Text no result has shown yet (it arrived while no send was writing): the next result's
  // head. One cursor per session: every result moves it to the end.
  text::TailBuffer unseen_;
  // The live send.
  std::shared_ptr<SendState> send_;
  // A signal or cancel was delivered and no reader has been seen since: the next write
  // waits for one (send_readiness.cpp, "write gate").
  bool aftermath_ = false;
  // The foreground group the stdin probe last saw relaying the terminal's input to a far
  // side (ssh, script, a PTY relay), 0 for none: it stays a relay while it holds the
  // terminal, also when a look finds it busy copying output (send_cancel.cpp).
  pid_t relay_group_ = 0;
  // The last send ended at the shell's own prompt and nothing was written or signalled
  // since: the next send's input is read at once, not typed ahead.
  bool idle_at_prompt_ = false;
  Timer send_timeout_timer_;
  Timer send_idle_timer_;
  // Polls the live send's `until` port, only while such a send is live.
  Timer port_timer_;
  // A channel that tells when a port opens (tells_ports) is only asked again this often.
  static constexpr std::chrono::milliseconds kPortPoll{100};
  Timer probe_timer_;
  // A stop ended the job's processes: the shell's prompt settles the send within this, or
  // the stop says the shell did not come back.
  Timer stop_settle_timer_;
  static constexpr std::chrono::milliseconds kStopSettle{5'000};
  // Held weakly by the sends that settled here: a stop of an ended job reaches the session
  // while it lives (SendState::ended_in).
  std::shared_ptr<ShellSession* const> self_token_ = std::make_shared<ShellSession* const>(this);
  // The settled send whose line still runs (SendState::line_open), until close_open_line.
  std::weak_ptr<SendState> open_line_;
  // The marks say the shell is at its prompt but it is not yet seen asleep in its read:
  // look again in a moment (send_readiness.cpp, check_prompt_readiness).
  Timer prompt_recheck_timer_;
  static constexpr std::chrono::milliseconds kPromptRecheck{1};
  bool checking_prompt_ = false;  // inside check_prompt_readiness (its drain re-enters)
  std::uint64_t text_chunks_ = 0;  // output chunks seen: did a drain bring anything?
  std::vector<HeldSignal> held_signals_;
  Timer signal_hold_timer_;

  // Start-up.
  std::unique_ptr<ShellSession> self_;  // owns this session until the spawn completes
  SpawnCallback spawn_done_;
  AbortSubscription abort_sub_;
  Error abort_reason_;
  Error start_error_;
  bool prompt_seen_ = false;

  // Close.
  std::vector<Callback<void>> close_waiters_;

  // Observers: a removed one leaves a null until no notification is under way.
  std::unique_ptr<record::Recorder> recorder_;
  std::vector<SessionObserver*> observers_;
  int telling_observers_ = 0;
};

template <class Tell>
inline void ShellSession::tell_observers(Tell tell) {
  ++telling_observers_;
  // By index: an observer added meanwhile is told too, one removed leaves a null.
  for (std::size_t i = 0; i < observers_.size(); ++i) {
    if (SessionObserver* o = observers_[i]) tell(*o);
  }
  if (--telling_observers_ == 0) std::erase(observers_, nullptr);
}

}  // namespace dshpty::shell
