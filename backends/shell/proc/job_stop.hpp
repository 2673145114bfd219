// Stopping a job with proof: SIGINT, then SIGTERM, then SIGKILL (each followed by SIGCONT
// to a stopped process, state T, so it acts on the signal), each after a bounded wait on the host's libev loop, completing
// once every process of the job is gone, or saying which remain and why.
//
// Which processes are the job's (docs/shell-backend.md, "Stopping a job"):
//   - every process in the job's foreground process group, and, while the job runs, in each
//     group the terminal's foreground moves to after it (the next command of the job's list:
//     `a; b` whose `a` exits on SIGINT rather than dying of it);
//   - every process of the session's tree that the root (the helper, a subreaper) holds
//     as an orphan, other than the shell, that started at or after the job did: a process
//     that double-forked away from the job (setsid, daemonize) has lost its parent, and the
//     subreaper is where it went. One that an earlier command left behind started before;
//   - every child of the shell that started at or after the job did: what the job's own
//     line put in the background (`a & b`, `a & wait`: its own group under job control);
//     while the job runs, only with `last_pid` known (not a far side's stop told only "so
//     long ago", whose start is a second early: an earlier `&` of that second would pass);
//   - every descendant of those and of every process found before (a round's children of
//     the job's known processes are the job's whatever their start time or group).
// Not the shell, and not what an earlier command put in the background with `&` (its own
// group under job control, a child of the shell, started before the job). The evidence has
// one hole, said here rather than hidden: an earlier background command that double-forks
// *after* the job started leaves an orphan that looks like the job's.
//
// A running job's shell gets one SIGINT with the job's first (never a later signal): an
// interactive shell that gets it while it waits for its foreground command abandons the rest
// of the line once that command ends, as it would had the command died of the interrupt.
//
// A job that has ended (its send settled: ended_ticks set) has no group of its own any
// more; what it left running is still its: the subreaper's orphans and the shell's own
// children (a `&` of the job's line, a job the shell holds stopped after SIGTSTP) that
// started between the job's start and its end, their descendants, and every process of a
// group or session one of the job's processes made (its pgid or sid is a pid handed out
// while the job ran: a daemon's child that its parent left to the subreaper after the job
// ended). What started after the end is a later command's. Start times count in 10 ms
// ticks: in the job's first tick a process counts only if its pid is newer than the newest
// pid at the job's start, and in its last tick only if it is not newer than the newest pid
// at its end.
//
// Each process is pinned with a pidfd as it is found, its start time checked after the
// pin, and signalled through the pidfd only: a recycled pid is never signalled. Its exit is
// watched on the pidfd (ev_io), so the stop completes at the moment the last one is gone,
// with no polling; at each step the tree is read again, so what the job forked meanwhile is
// found and pinned too. No threads, no sleeps, no waitpid: the tree's reaper reaps.
#pragma once

#include <ev.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loop/timer.hpp"

namespace dshpty::proc {

// A moment as /proc/<pid>/stat's starttime counts it: clock ticks since boot.
std::uint64_t boot_ticks_now();
// The newest pid this pid namespace handed out (/proc/sys/kernel/ns_last_pid), 0 if unread:
// with boot_ticks_now, what tells a process started in the job's first tick from an
// earlier one started in that same 10 ms.
pid_t newest_pid();

struct JobSpec {
  pid_t group = 0;      // the job's foreground process group; 0 for an ended job
  pid_t root = 0;       // the session's subreaper: its tree holds every process of the session
  pid_t shell = 0;      // never signalled
  std::uint64_t started_ticks = 0;  // boot_ticks_now() when the job started
  std::uint64_t ended_ticks = 0;    // when it ended (its send settled); 0 while it runs
  pid_t last_pid = 0;               // newest_pid() when the job started; 0: unknown
  pid_t ended_last_pid = 0;         // newest_pid() when it ended; 0: unknown
};

// When a job ran, as a channel counts it (ProcessChannel::clock_ticks, newest_pid).
struct JobTimes {
  std::uint64_t started_ticks = 0;
  std::uint64_t ended_ticks = 0;  // 0 while it runs
  pid_t last_pid = 0;             // the newest pid at its start; 0: unknown
  pid_t ended_last_pid = 0;       // the newest pid at its end; 0: unknown
  // The channel's input count when the job's line was queued (ProcessChannel::bytes_queued):
  // its line is the input from here. A far side that noted each write knows its start from
  // it. None for a line typed ahead behind a running command: its write is not its start.
  std::optional<std::uint64_t> input_at;
};

// The processes a command started at `started_ticks` made, in the session's tree under
// `root` (its subreaper), parents first: each started at or after it, a child of `shell`,
// of `root` (an orphan it adopted: setsid, a daemon) or of another such. Not what an earlier
// command left running, nor what that forks later (a server's new worker). What a wait for
// a port counts as the command's (docs/shell-backend.md, "Conditions").
std::vector<pid_t> job_processes(pid_t root, pid_t shell, std::uint64_t started_ticks);

struct StopTimings {
  std::chrono::milliseconds after_interrupt{1000};  // wait after SIGINT before SIGTERM
  std::chrono::milliseconds after_terminate{1000};  // wait after SIGTERM before SIGKILL
  std::chrono::milliseconds after_kill{1000};       // wait after SIGKILL before giving up
};

struct RemainingProcess {
  pid_t pid = 0;
  std::string command;  // /proc/<pid>/comm
  std::string why;      // "uninterruptible sleep (D)", "signal refused: ...", "alive after SIGKILL"
};

struct StopReport {
  bool stopped = false;              // every process of the job is gone
  std::vector<std::string> signals;  // sent, in order: "SIGINT", "SIGTERM", "SIGKILL"
  std::vector<pid_t> found;          // every process found to be the job's, in finding order
  std::vector<RemainingProcess> remaining;  // empty when stopped
};

// What a session holds while a stop runs: destroying it cancels the stop's answer. A local
// stop is a JobStop; a remote one waits for the far side's (remote/far_jobs.hpp).
class StopHandle {
 public:
  virtual ~StopHandle() = default;
  // The job's send settled while the stop runs: from here on a new foreground group or a
  // new orphan is a later command's, not the job's.
  virtual void job_ended(std::uint64_t /*ended_ticks*/, pid_t /*ended_last_pid*/) {}
};

class JobStop final : public StopHandle {
 public:
  using Done = std::function<void(StopReport)>;

  // Finds the job's processes and sends SIGINT at once; `done` is called exactly once, from
  // the loop (never inside this constructor), unless the JobStop is destroyed first. A job
  // with no process left completes on the next loop iteration with stopped = true and no
  // signal sent. `done` may destroy the JobStop.
  JobStop(struct ev_loop* loop, JobSpec job, StopTimings timings, Done done);
  ~JobStop() override;
  JobStop(const JobStop&) = delete;
  JobStop& operator=(const JobStop&) = delete;

  const StopReport& report() const noexcept { return report_; }
  void job_ended(std::uint64_t ended_ticks, pid_t ended_last_pid) override;

 private:
  struct Pinned;
  enum class Step { interrupt, terminate, kill, last_look, done };

  // Reads the tree, pins every job process not pinned yet; true when one was added.
  bool find();
  void signal_all(int signo);
  void interrupt_shell();
  void on_timer();
  void on_exit(Pinned& p);
  void check_done();
  void finish(bool stopped);
  std::size_t live() const;

  struct ev_loop* loop_;
  JobSpec job_;
  StopTimings timings_;
  Done done_;
  Step step_ = Step::interrupt;
  shell::Timer timer_;
  std::vector<std::unique_ptr<Pinned>> pinned_;
  std::vector<pid_t> groups_;  // the job's foreground groups: job_.group and those after it
  StopReport report_;
};

}  // namespace dshpty::proc
