// How a session's supervisor helper is started, as a plan: the program, its argv and its
// environment, decided before anything runs, then carried out by one posix_spawn. Today a
// plan runs the helper directly; a confining launcher (bubblewrap) wraps a plan by
// prefixing its argv, so the spawn code and the fd layout below stay the same.
//
// The helper's fds: the PTY slave on 0, 1 and 2, its end of the control socket on 3
// (link/protocol.hpp), nothing else. Every signal at its default, an empty mask, and a
// session of its own so the host terminal's job-control signals never reach it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dshpty/result.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell {

using proc::UniqueFd;

// Mounts a wrapper's argv gets right before each start of it, not when the spawn was planned:
// a sandbox's masks over the host's sockets (sandbox/socket_masks.hpp), which come and go.
class LateMounts {
 public:
  virtual ~LateMounts() = default;
  // The arguments, listed now (each call replaces the previous listing).
  virtual std::vector<std::string> list() = 0;
  // The wrapper failed before the helper spoke, saying `said`: true when that names a path
  // of the last listing that is gone since (another start, with a fresh list, may succeed).
  virtual bool gone_since(const std::string& said) const = 0;
  // The wrapper's mounts are done (the helper spoke, or the wrapper ended): what it had to
  // make on the host for a path gone since the listing is removed.
  virtual void settle() = 0;
};

// The helper's path: `configured` if set, else $DSHPTY_SUPERVISOR, else the installed one.
std::string resolve_supervisor_path(const std::string& configured);

struct LaunchPlan {
  std::string program;             // what posix_spawn executes (the helper, or its wrapper)
  std::vector<std::string> argv;   // argv[0] included
  std::vector<std::string> env;    // "NAME=value": the helper's, and so the shell's
  // A wrapper (bwrap) keeps every fd it inherits until it exits: the PTY slave then goes
  // to the helper over the control socket (a `tty` message), never on the wrapper's 0..2,
  // which are /dev/null, /dev/null and `stderr_fd` (the wrapper's diagnostics).
  bool tty_by_message = false;
  // The helper and the shell live in a pid namespace of their own: the pids they report
  // are the namespace's, and the host translates them (proc/ns_pid.hpp).
  bool pid_namespace = false;
  // The index in argv of an entry that becomes the PTY slave's path once the PTY exists
  // (bwrap binds it as the sandbox's /dev/console, so ttyname() finds the terminal), or -1.
  int tty_path_arg = -1;
  // Who runs the helper, for the words of a failure ("sandbox read-only (bwrap PATH)").
  std::string wrapper_label;
  // A system-call filter for the wrapper to install (BPF bytes, sandbox/seccomp_filter.hpp),
  // or null. It reaches the wrapper as fd kSeccompFd of a fresh sealed memfd, which bwrap
  // reads and closes before it starts the helper (argv names that fd: "--seccomp 4").
  std::shared_ptr<const std::string> seccomp_program;
  // The helper's own path, whoever runs it (for the words of its loss).
  std::string helper_path;
  // Fds the helper inherits at kPassedFdBase, kPassedFdBase + 1, ... (the host's cgroup
  // directories, limits/cgroup_wire.hpp); the caller keeps them open until the spawn.
  std::vector<int> passed_fds;
  // Listed and inserted into argv at late_mounts_at right before each spawn, or null.
  std::shared_ptr<LateMounts> late_mounts;
  std::size_t late_mounts_at = 0;
};

// Where the wrapper finds the filter's program.
inline constexpr int kSeccompFd = 4;
inline constexpr int kPassedFdBase = 5;

// The helper run directly: `supervisor [--cwd DIR] -- SHELL_ARGV...`.
LaunchPlan direct_launch(const std::string& supervisor_path,
                         const std::vector<std::string>& shell_argv,
                         const std::optional<std::string>& cwd, std::vector<std::string> env);

struct LaunchedHelper {
  pid_t pid = -1;
  UniqueFd pidfd;  // pins the helper; readable once it exited
};

// Carries out `plan` with `slave_fd` as the helper's 0..2 (or, for a plan with
// tty_by_message, /dev/null and `stderr_fd` instead: the caller then sends the slave) and
// `socket_fd` as its 3. On failure nothing is left running. BACKEND_FAILED naming the
// program.
Result<LaunchedHelper> spawn_helper(const LaunchPlan& plan, int slave_fd, int socket_fd,
                                    int stderr_fd = -1);

}  // namespace dshpty::shell
