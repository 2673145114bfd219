#include "channel/pty.hpp"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>

namespace dshpty::shell {

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
