// How a session's supervisor helper is started, as a plan: the program, its argv and its
// environment, decided before anything runs, then carried out by one posix_spawn. Today a
// plan runs the helper directly; a confining launcher (bubblewrap) wraps a plan by
// prefixing its argv, so the spawn code and the fd layout below stay the same.
//
// The helper's fds: the PTY slave on 0, 1 and 2, its end of the control socket on 3
// (channel/protocol.hpp), nothing else. Every signal at its default, an empty mask, and a
// session of its own so the host terminal's job-control signals never reach it.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "dshpty/result.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell {

using proc::UniqueFd;

// The helper's path: `configured` if set, else $DSHPTY_SUPERVISOR, else the installed one.
std::string resolve_supervisor_path(const std::string& configured);

struct LaunchPlan {
  std::string program;             // what posix_spawn executes (the helper, or its wrapper)
  std::vector<std::string> argv;   // argv[0] included
  std::vector<std::string> env;    // "NAME=value": the helper's, and so the shell's
};

// The helper run directly: `supervisor [--cwd DIR] -- SHELL_ARGV...`.
LaunchPlan direct_launch(const std::string& supervisor_path,
                         const std::vector<std::string>& shell_argv,
                         const std::optional<std::string>& cwd, std::vector<std::string> env);

struct LaunchedHelper {
  pid_t pid = -1;
  UniqueFd pidfd;  // pins the helper; readable once it exited
};

// Carries out `plan` with `slave_fd` as the helper's 0..2 and `socket_fd` as its 3. On
// failure nothing is left running. BACKEND_FAILED naming the program.
Result<LaunchedHelper> spawn_helper(const LaunchPlan& plan, int slave_fd, int socket_fd);

}  // namespace dshpty::shell
