// Opening a PTY pair with both ends close-on-exec from birth (glibc's openpty() leaves
// both inheritable).
#pragma once

#include "dshpty/result.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell {

using proc::UniqueFd;

struct PtyPair {
  UniqueFd master;  // O_NONBLOCK, for the loop
  UniqueFd slave;   // blocking, for the shell
};

// A new pair with the window size set. BACKEND_FAILED naming the failed call.
Result<PtyPair> open_pty(unsigned rows, unsigned cols);
// Sets the window size on `master`; the kernel sends SIGWINCH to the foreground group.
Status set_window_size(int master, unsigned rows, unsigned cols);

}  // namespace dshpty::shell
