// The local process channel: the session's processes on this machine, under their own
// dshpty-supervisor (wire: link/protocol.hpp). Three fds on the host's loop and nothing
// else: the PTY master (output and input), the control socket (the helper's messages), the
// helper's pidfd (its exit, even when the host stole the reap). No signal handlers, no
// waitpid(-1), no threads.
#pragma once

#include <ev.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "local/launch_plan.hpp"
#include "process_channel.hpp"
#include "link/protocol.hpp"
#include "limits/cgroup_location.hpp"
#include "loop/timer.hpp"
#include "proc/stdin_probe.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell {

struct LocalLaunch {
  LaunchPlan plan;
  unsigned rows = 40;
  unsigned cols = 160;
  // For the words of a start failure.
  std::string shell_path;
  std::optional<std::string> cwd;
  // The session's cgroups (null without limits): removed once the helper proved the tree
  // gone, at the latest when the channel goes.
  std::unique_ptr<limits::SessionDirs> cgroups{};
};

class LocalChannel final : public ProcessChannel {
 public:
  // Opens the PTY and the control socket and spawns the helper. On failure nothing is left
  // running. No event is delivered before this returns.
  static Result<std::unique_ptr<LocalChannel>> launch(struct ev_loop* loop, ChannelEvents& events,
                                                      LocalLaunch launch);
  ~LocalChannel() override;
  LocalChannel(const LocalChannel&) = delete;
  LocalChannel& operator=(const LocalChannel&) = delete;

  bool read_available() override;
  bool output_ended() const override { return output_ended_; }
  void write(std::string_view bytes) override;
  std::uint64_t bytes_queued() const override { return bytes_queued_; }
  std::uint64_t bytes_written() const override { return bytes_written_; }
  std::optional<std::size_t> take_back_input(std::size_t own) override;
  Status resize(unsigned rows, unsigned cols) override;
  TerminalFacts terminal_facts(FactSet wanted) const override;
  std::optional<std::string> command_line(pid_t pid) const override;
  Status signal_group(pid_t pgid, int signo) override;
  proc::SignalFate signal_fate(pid_t pgid, int signo) const override { return proc::signal_fate(pgid, signo); }
  bool proves_readers() const override { return probe_.has_value(); }
  void mark_readers() override;
  void mark_shell_reader(pid_t shell) override;
  void forget_readers() override;
  bool foreground_reading() override;
  bool foreground_relays() const override { return relaying_; }
  bool foreground_relays_input() const override { return relaying_input_; }
  void kill_tree(std::chrono::milliseconds grace) override;
  bool quiescent() const override { return quiescent_reported_ && helper_gone_; }
  // The helper died without proving the tree gone: a limited session's cgroups hold what is
  // left, and kill_tree empties them (adversary round 6 F6: a `nohup sleep &` outlived it).
  LostTree lost_tree() const override {
    return emptying_ == Emptying::running ? LostTree::ending
                                          : emptying_ == Emptying::proven ? LostTree::ended : LostTree::not_ended;
  }
  // A sandbox only: SIGKILLs the namespace's init (the helper) through a pidfd.
  std::optional<std::string> force_end() override;
  void release() override;
  LossWords word_loss(const Error& cause) const override;

  std::optional<LimitHit> limit_hit() const override;
  Result<std::optional<SendMatch>> port_listener(std::uint16_t port, std::uint64_t since_ticks) const override;  // local_ports.cpp
  std::optional<TreeLook> look_at_tree() const override;  // local_ports.cpp
  std::uint64_t clock_ticks() const override;  // local_jobs.cpp
  pid_t newest_pid() const override;  // local_jobs.cpp
  Result<std::unique_ptr<proc::StopHandle>> stop_job(proc::JobTimes times, proc::JobStop::Done done) override;

  pid_t helper_pid() const noexcept { return helper_pid_; }
  // Facts of one process of the session (what terminal_facts reads, and the far bridge
  // asks for the shell): its working directory (the kernel's: symlinks resolved), and
  // whether the group leader `leader` is still a copy of the shell `shell` (same command
  // line: forked, not exec'd yet).
  std::optional<std::string> working_directory(pid_t pid) const;
  bool leader_is_shell_copy(pid_t leader, pid_t shell) const;
  // Stops (and resumes) reading the terminal: the far bridge's flow control
  // (supervisor/stdio_bridge.cpp). While paused, read_available() reads nothing and a
  // writing program blocks once the terminal's buffer is full.
  void pause_output(bool paused);

 private:
  LocalChannel(struct ev_loop* loop, ChannelEvents& events, LocalLaunch launch);
  Status start();

  static void on_master_readable(struct ev_loop*, ev_io* w, int);
  static void on_master_writable(struct ev_loop*, ev_io* w, int);
  static void on_control_readable(struct ev_loop*, ev_io* w, int);
  static void on_pidfd_readable(struct ev_loop*, ev_io* w, int);
  static void on_init_readable(struct ev_loop*, ev_io* w, int);

  // spawn_helper, with the plan's late mounts listed now (a sandbox's socket masks).
  Result<LaunchedHelper> spawn_with_late_mounts(int slave_fd, int socket_fd, int diag_fd);
  // The wrapper made its mounts or ended: what it made for a path gone meanwhile goes.
  void wrapper_mounts_done();
  // The wrapper failed for a path gone since its late mounts were listed: the failed
  // start's PTY, socket and pidfd go, and everything starts again.
  Status start_again();
  static constexpr int kMaxStartsAgain = 3;

  // A confined launch: the slave for the helper, queued on the control socket.
  static Status send_tty(int socket_fd, int slave_fd);
  // What the wrapper wrote to its stderr (bounded, one line), for a failed sandbox.
  std::string wrapper_said() const;
  // One fact each, read from the kernel or /proc (terminal_facts).
  pid_t read_foreground() const;
  std::optional<std::size_t> read_input_unread() const;
  std::uint64_t read_ignored_signals(pid_t pid) const;
  // Reads what the master holds, at most kReadsPerEvent chunks; until_empty: until EAGAIN.
  bool read_master(bool until_empty);
  void read_ready();
  void flush_writes();
  void read_control();
  void handle_message(const shell_protocol::ControlMessage& msg);
  void reap_helper();
  // The helper proved the tree gone: on_quiescent once the session's cgroups are removed
  // (a second proof), or on_lost when one could not be (something is still inside it).
  void report_quiescent();
  // Takes in the limits the kernel counted since the last look (SessionDirs::counts).
  void absorb_limit_counts() const;
  // The session cgroups' paths, for the words of a failure (" /sys/fs/cgroup/...").
  std::string cgroup_words() const;
  // force_end's proof: the outer bwrap reaped and the namespace's init gone.
  void check_forced_end();
  // A tick of emptying the session's cgroups (lost_tree): SIGKILL to what is listed,
  // until none is (then they are removed: on_quiescent) or the grace ran out (on_lost).
  void begin_emptying(std::chrono::milliseconds grace);
  void empty_cgroups();

  struct ev_loop* loop_;
  ChannelEvents& events_;
  LocalLaunch launch_;

  UniqueFd master_;
  UniqueFd control_;
  UniqueFd pidfd_;
  UniqueFd diag_;  // a wrapper's stderr (confined launches), read when it fails
  pid_t helper_pid_ = -1;
  pid_t shell_pid_ = -1;  // as the host numbers it, once started
  bool helper_spoke_ = false;  // a message came from the helper (so the wrapper worked)
  int starts_again_ = 0;       // start_again()s so far
  std::vector<UniqueFd> kept_fds_;  // copies of plan.passed_fds until the helper spoke
  ev_io master_read_{};
  ev_io master_write_{};
  ev_io control_io_{};
  ev_io pidfd_io_{};
  // force_end: the namespace's init, pinned while its parent (the outer bwrap) holds its
  // pid. Its exit as init comes only after every other process of the namespace is gone.
  enum class Forced { no, waiting, proven };
  Forced forced_ = Forced::no;
  enum class Emptying { no, running, proven, failed };
  Emptying emptying_ = Emptying::no;
  ev_tstamp emptying_deadline_ = 0;
  std::optional<std::chrono::milliseconds> kill_grace_;  // kill_tree was asked, with this grace
  Timer emptying_timer_;
  UniqueFd init_pidfd_;
  ev_io init_io_{};

  bool output_ended_ = false;
  bool output_paused_ = false;
  bool quiescent_reported_ = false;
  bool helper_gone_ = false;
  std::string pending_writes_;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t bytes_queued_ = 0;
  // The newest bytes written to the master: what a take-back's flush removed from before
  // the cancelled send's bytes is queued again from here.
  std::string written_tail_;
  static constexpr std::size_t kWrittenTail = 16 * 1024;
  std::optional<proc::StdinProbe> probe_;  // where this platform can tell
  bool relaying_ = false;                  // the last probe found a relay, not a reader
  bool relaying_input_ = false;            // ... waiting on another input beside the terminal
  // The newest limit reached: reported by the helper where the kernel signals it (v1 OOM,
  // v2 events), else read from the counters when asked; the counts already taken in.
  mutable std::optional<LimitHit> limit_hit_;
  mutable limits::SessionDirs::Counts limit_counts_;
};

// The factory a backend hands a session for a local channel (StartParams::open_channel).
ChannelFactory local_channel_factory(LocalLaunch launch);

}  // namespace dshpty::shell
