// Opening a PTY pair with both ends close-on-exec from birth (glibc's openpty() leaves
// both inheritable).
#pragma once

#include <cstddef>
#include <optional>

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
// Removes what the terminal's reader has not taken from its input queue (the line
// discipline's buffer, a canonical line included, and what the kernel has not handed to
// it yet): the bytes removed, or nullopt when the terminal could not be asked. The bytes
// are read off the queue, so a reader racing the call gets each byte or this count does,
// never both, and none is dropped uncounted (a reader asleep in read() gets what it was
// woken for). In canonical mode an unfinished last line is removed but not counted.
std::optional<std::size_t> flush_unread_input(int master);

}  // namespace dshpty::shell
