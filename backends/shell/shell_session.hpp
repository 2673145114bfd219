// One shell session: the host side of a PTY whose process tree lives under its own
// dshpty-supervisor (protocol: protocol.hpp). Everything is driven by watchers on fds (the
// master, the control socket, the helper's pidfd) and timers on the host's loop.
//
// Three events are tracked separately and never inferred from one another:
//   shell exited  — the helper's `exited` message (the status comes from it, so a host that
//                   stole the helper's reap changes nothing);
//   output ended  — EIO on the master: no process holds the slave any more;
//   quiescent     — the helper said `quiescent` AND its pidfd became readable.
// status() turns `exited` only once the output ended (or drain_timeout passed after the
// exit, when a background process still holds the terminal), so every byte the shell
// wrote before exiting is delivered before anyone sees the exit.
//
// Teardown (a failed start-up, or close): ask the helper to kill the tree, wait for
// quiescence (bounded by close_grace + kQuiesceSlack), then for the master to reach EIO
// (bounded by drain_timeout: a process outside the tree holding the slave is reported as
// a failure, not waited for). Success closes every fd; failure clears the close fence so
// a later close retries.
#pragma once

#include <ev.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/backend.hpp"
#include "dshpty/loop.hpp"
#include "dshpty/shell.hpp"
#include "channel/protocol.hpp"
#include "shell_send.hpp"
#include "text/prompt_watch.hpp"
#include "text/sanitizer.hpp"
#include "text/scrollback.hpp"
#include "proc/stdin_probe.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell {

using proc::UniqueFd;

// What ShellBackend resolved and checked before a session starts.
struct StartParams {
  std::string session_id;
  std::vector<std::string> argv;
  std::optional<std::string> cwd;
  unsigned rows = 40;
  unsigned cols = 160;
  std::vector<std::string> env;  // "NAME=value", already scrubbed and set
  std::string supervisor_path;
  AbortSignal signal;
};

class ShellSession final : public BackendSession {
 public:
  // Starts a session; `done` gets it once the shell's first prompt appeared, or an error
  // once everything it started is gone (make_backend_cleanup_error when that failed too).
  // `done` runs from the loop.
  static void start(struct ev_loop* loop, const ShellConfig& config, StartParams params,
                    SpawnCallback done);

  ~ShellSession() override;
  ShellSession(const ShellSession&) = delete;
  ShellSession& operator=(const ShellSession&) = delete;

  const std::string& motd() const override { return motd_; }
  std::optional<int> pid() const override;
  SessionStatus status() const override;
  Result<std::unique_ptr<BackendSendOperation>> start_send(SendRequest request,
                                                           Callback<SendResult> done) override;
  Result<ReadPage> read(const ReadRequest& request) override;
  Status signal(Signal signal, Callback<SignalResult> done) override;
  void close(std::string reason, Callback<void> done) override;

  // Shell-specific. INVALID_ARGUMENT outside 1..4096; SESSION_CLOSING while closing.
  Status resize(unsigned rows, unsigned cols);
  // Queues raw bytes for the terminal (written as the master accepts them).
  Status write(std::string_view bytes);

  // The three events, for tests and diagnostics.
  bool shell_exited() const noexcept { return shell_status_.has_value(); }
  bool output_ended() const noexcept { return output_ended_; }
  bool quiescent() const noexcept { return quiescent_reported_ && helper_gone_; }
  pid_t supervisor_pid() const noexcept { return helper_pid_; }
  const std::string& id() const noexcept { return session_id_; }
  // Retained output: the scrollback's bytes, and what the text layer holds in all (the
  // scrollback and the live send's tail), for the memory-bound tests.
  std::size_t retained_bytes() const noexcept { return scrollback_.retained_bytes(); }
  std::size_t text_memory_bytes() const noexcept {
    return scrollback_.memory_bytes() + (send_ ? send_->tail.memory_bytes() : 0);
  }

  // How often the stdin probe looks at /proc while a send's write has landed.
  static constexpr std::chrono::milliseconds kProbeInterval{20};

  // How long past close_grace the helper may take to report quiescence before a close
  // fails (a wedged or stopped helper).
  static constexpr std::chrono::milliseconds kQuiesceSlack{10'000};

 private:
  enum class Phase { starting, running, tearing_down, closed };

  ShellSession(struct ev_loop* loop, const ShellConfig& config, StartParams params);
  Status launch();

  // Watchers.
  static void on_master_readable(struct ev_loop*, ev_io* w, int);
  static void on_master_writable(struct ev_loop*, ev_io* w, int);
  static void on_control_readable(struct ev_loop*, ev_io* w, int);
  static void on_pidfd_readable(struct ev_loop*, ev_io* w, int);
  static void on_startup_timeout(struct ev_loop*, ev_timer* w, int);
  static void on_exit_publish_timeout(struct ev_loop*, ev_timer* w, int);
  static void on_quiesce_timeout(struct ev_loop*, ev_timer* w, int);
  static void on_drain_timeout(struct ev_loop*, ev_timer* w, int);

  // Reads what the master holds (bounded per call); true when it may hold more.
  bool read_master();
  void flush_writes();
  void read_control();
  void handle_message(const shell_protocol::ControlMessage& msg);
  void reap_helper();

  // The one place output enters the session's text layer.
  void on_output(std::string_view bytes);
  void on_output_ended();
  void on_shell_exited(int wait_status);
  void publish_exit();

  // Sends (shell_session_send.cpp).
  friend class ShellSendOperation;
  void begin_write(const std::shared_ptr<SendState>& send);
  void on_write_progress();
  void on_write_landed();
  void on_send_output(const text::SanitizedText& chunk);
  void check_prompt_readiness();
  void settle_send(WaitReason reason);
  void fail_send(Error error);
  void drop_send();
  bool cancel_send(SendState& send);
  void interrupt_foreground();
  static void on_send_timeout(struct ev_loop*, ev_timer* w, int);
  static void on_send_idle(struct ev_loop*, ev_timer* w, int);
  static void on_probe_tick(struct ev_loop*, ev_timer* w, int);

  // Start-up.
  void try_finish_start();
  void fail_start(Error error);
  void complete_start();

  // Teardown.
  void begin_teardown();
  void check_teardown();
  void finish_teardown(Error error);
  void release_fds();

  struct ev_loop* loop_;
  ShellConfig config_;
  StartParams params_;
  Deferred deferred_;
  Phase phase_ = Phase::starting;

  UniqueFd master_;
  UniqueFd control_;
  UniqueFd pidfd_;
  pid_t helper_pid_ = -1;
  ev_io master_read_{};
  ev_io master_write_{};
  ev_io control_io_{};
  ev_io pidfd_io_{};
  ev_timer startup_timer_{};
  ev_timer exit_publish_timer_{};
  ev_timer quiesce_timer_{};
  ev_timer drain_timer_{};

  std::string session_id_;
  std::optional<pid_t> shell_pid_;
  std::optional<SessionStatus> shell_status_;  // from the helper
  bool exit_published_ = false;                // status() says exited
  bool output_ended_ = false;
  bool quiescent_reported_ = false;
  bool helper_gone_ = false;
  bool kill_sent_ = false;
  std::string pending_writes_;
  std::uint64_t bytes_written_ = 0;  // to the master, ever
  std::uint64_t bytes_queued_ = 0;   // into pending_writes_, ever

  // Terminal text.
  text::Sanitizer sanitizer_;
  text::SanitizedText chunk_;  // the latest read's text, reused
  text::Scrollback scrollback_;
  text::PromptWatch prompt_watch_;
  std::optional<proc::StdinProbe> probe_;  // once the slave's device is known

  // The live send.
  std::shared_ptr<SendState> send_;
  ev_timer send_timeout_timer_{};
  ev_timer send_idle_timer_{};
  ev_timer probe_timer_{};

  // Start-up.
  std::unique_ptr<ShellSession> self_;  // owns this session until the spawn completes
  SpawnCallback spawn_done_;
  AbortSubscription abort_sub_;
  Error abort_reason_;
  Error start_error_;
  bool prompt_seen_ = false;
  bool motd_done_ = false;  // the first marker arrived: the motd is complete
  std::string motd_;

  // Close.
  std::string close_reason_;
  std::vector<Callback<void>> close_waiters_;
};

}  // namespace dshpty::shell
