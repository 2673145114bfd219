#include "local/pty.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

namespace dshpty::shell {

std::optional<std::size_t> flush_unread_input(int master) {
  // The input queue is the slave's, and only the helper holds the slave: a transient peer
  // through the master (no path lookup, CLOEXEC), non-blocking, held for a few calls.
  UniqueFd peer(::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
  if (!peer.valid()) return std::nullopt;
  // A master's write reaches the line discipline from a kernel worker, a moment later. A
  // count (FIONREAD) misses what the worker still holds, and the flush below drops it
  // uncounted; a poll waits for the worker only when nothing is readable yet, so an earlier
  // line already there made it answer at once (a take-back under load then counted the
  // earlier line and not its own). The unread bytes are read out instead: a read that
  // finds nothing waits for the worker and looks again (below: an EAGAIN that did not
  // look). Canonical mode reads whole lines (an EOF character reads
  // as 0 bytes and counts nothing, as FIONREAD skips it); the unfinished last line stays,
  // and the flush removes it uncounted.
  // Outside canonical mode a read answers 0 for "nothing" (MIN 0, TIME 0) instead of EAGAIN.
  termios modes{};
  if (::tcgetattr(peer.get(), &modes) < 0) return std::nullopt;
  const bool canonical = (modes.c_lflag & ICANON) != 0;
  std::size_t unread = 0;
  char buf[4096];
  // A non-blocking read answers EAGAIN without looking while a reader sleeps in read() (it
  // holds the queue's lock: a line editor reads a byte at a time, so it often does), and
  // then it has not waited for the kernel's worker either. So an EAGAIN is checked: a poll
  // waits for the worker when nothing is readable, and FIONREAD says whether bytes wait.
  // Measured before: a flush after such an EAGAIN dropped the whole line uncounted (1 in 8
  // cancels a few ms after a send at bash's prompt, 1 in 3 at zsh's): the shell never
  // got it, the cancel's SIGINT waited out its hold for a C that never came.
  // The line discipline holds at most 4 KiB: the bound only stops a peer that keeps
  // answering 0 (a hangup), or a reader that keeps the lock, from spinning.
  bool drained = false;
  for (int reads = 0; reads < 8192; ++reads) {
    const ssize_t n = ::read(peer.get(), buf, sizeof buf);
    if (n > 0) {
      unread += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 && canonical) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EIO) return std::nullopt;
    if (n == 0 || errno == EIO) {
      drained = true;
      break;
    }
    pollfd p{peer.get(), POLLIN, 0};
    while (::poll(&p, 1, 0) < 0 && errno == EINTR) {
    }
    int waiting = 0;
    if (::ioctl(peer.get(), FIONREAD, &waiting) < 0) return std::nullopt;
    if (waiting == 0) {
      drained = true;
      break;
    }
  }
  // A reader that woke meanwhile took bytes this count would have held: the caller's
  // evidence (the shell's own marks) decides what ran, never this count alone.
  // In canonical mode an unfinished last line stays after the reads (FIONREAD does not
  // count it): removed uncounted. Only once nothing else waits (drained): a flush removes
  // what the worker still holds too, bytes a reader would have had and this count has not.
  if (canonical && drained && ::tcflush(peer.get(), TCIFLUSH) < 0) return std::nullopt;
  return unread;
}

Status set_window_size(int master, unsigned rows, unsigned cols) {
  winsize ws{};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  if (::ioctl(master, TIOCSWINSZ, &ws) < 0) {
    return make_system_error(Code::BACKEND_FAILED, "PTY window size (TIOCSWINSZ)", errno);
  }
  return {};
}

Result<PtyPair> open_pty(unsigned rows, unsigned cols) {
  PtyPair pair;
  pair.master.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!pair.master.valid()) return make_system_error(Code::BACKEND_FAILED, "posix_openpt", errno);
  if (::unlockpt(pair.master.get()) < 0) {
    return make_system_error(Code::BACKEND_FAILED, "unlockpt", errno);
  }
  // TIOCGPTPEER opens the slave through the master: no path lookup, no race with another
  // opener, and CLOEXEC from birth.
  pair.slave.reset(::ioctl(pair.master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!pair.slave.valid()) {
    return make_system_error(Code::BACKEND_FAILED, "PTY slave (TIOCGPTPEER)", errno);
  }
  if (Status st = set_window_size(pair.master.get(), rows, cols); !st) return st.error();
  int flags = ::fcntl(pair.master.get(), F_GETFL);
  if (flags < 0 || ::fcntl(pair.master.get(), F_SETFL, flags | O_NONBLOCK) < 0) {
    return make_system_error(Code::BACKEND_FAILED, "PTY master O_NONBLOCK", errno);
  }
  return pair;
}

}  // namespace dshpty::shell
