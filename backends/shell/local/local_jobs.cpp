// The local channel's job stop (proc/job_stop.hpp): the job in the terminal's foreground,
// found under the session's subreaper, which is the shell's parent (the helper; in a
// confined session the helper inside the sandbox, numbered as this host numbers it), so a
// server that left the job's tree by setsid and was adopted there is still found.
#include "local/local_channel.hpp"
#include "proc/procfs.hpp"

namespace dshpty::shell {

std::uint64_t LocalChannel::clock_ticks() const { return proc::boot_ticks_now(); }

pid_t LocalChannel::newest_pid() const { return proc::newest_pid(); }

Result<std::unique_ptr<proc::StopHandle>> LocalChannel::stop_job(proc::JobTimes times, proc::JobStop::Done done) {
  procfs::Stat shell{};
  if (shell_pid_ <= 0 || !procfs::read_stat(shell_pid_, shell) || shell.state == 'Z')
    return make_error(Code::BACKEND_FAILED, "stop: the session's shell is gone");
  // An ended job has no group: the foreground is the shell's, or a later command's.
  pid_t group = times.ended_ticks != 0 ? 0 : foreground_group();
  if (times.ended_ticks == 0 && group <= 0)
    return make_error(Code::BACKEND_FAILED, "stop: the terminal has no foreground process group");
  // The shell in front runs the job's line itself (a builtin loop between its commands,
  // `wait`): no group of the job's; its processes are what its line started.
  if (group == shell_pid_) group = 0;
  proc::JobSpec job{.group = group, .root = shell.ppid, .shell = shell_pid_, .started_ticks = times.started_ticks,
                    .ended_ticks = times.ended_ticks, .last_pid = times.last_pid,
                    .ended_last_pid = times.ended_last_pid};
  return std::unique_ptr<proc::StopHandle>(std::make_unique<proc::JobStop>(loop_, job, proc::StopTimings{}, std::move(done)));
}

}  // namespace dshpty::shell
