// Starting dshpty-supervisor with posix_spawn: its only fds are the PTY slave (0, 1, 2) and
// its end of the control socket (3), every signal at its default, an empty mask, and a
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

struct LaunchedSupervisor {
  pid_t pid = -1;
  UniqueFd pidfd;  // pins the helper; readable once it exited
};

// Spawns the helper. `shell_env` becomes its (and the shell's) environment. On failure
// nothing is left running. BACKEND_FAILED naming the helper's path.
Result<LaunchedSupervisor> launch_supervisor(const std::string& path,
                                             const std::vector<std::string>& shell_argv,
                                             const std::optional<std::string>& cwd,
                                             const std::vector<std::string>& shell_env,
                                             int slave_fd, int socket_fd);

}  // namespace dshpty::shell
