// Writing a whole buffer to an fd, the one loop every writer that may not stop half-way
// uses: a memfd or a record file (the library), the helper's stderr, its relay and its
// link's blocking flush. System calls only, so the supervisor helper includes it too.
#pragma once

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

namespace dshpty::proc {

using Deadline = std::optional<std::chrono::steady_clock::time_point>;

// Writes all of `bytes`, retrying EINTR: 0, or the errno of the write that failed (EIO for
// one that wrote nothing, ETIMEDOUT at the deadline, EPIPE for a hang-up seen by poll).
// A full fd (non-blocking: a relay's stdout, the link) is waited for with poll until
// `deadline` (nullopt: none; a time already past: one pass that never waits). `written`,
// if given, counts the bytes that went out. The library calls it on files and memfds only,
// which never say EAGAIN: it never waits on the host's loop.
inline int write_all(int fd, std::string_view bytes, Deadline deadline = std::nullopt,
                     std::size_t* written = nullptr) {
  using namespace std::chrono;
  std::size_t done = 0;
  int rc = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      rc = n == 0 ? EIO : errno;
      break;
    }
    int wait_ms = -1;
    if (deadline) {
      const auto left = duration_cast<milliseconds>(*deadline - steady_clock::now()).count();
      if (left <= 0) {
        rc = ETIMEDOUT;
        break;
      }
      wait_ms = static_cast<int>(left);
    }
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      rc = errno;
      break;
    }
    if (ready == 0) {
      rc = ETIMEDOUT;
      break;
    }
    if (p.revents & (POLLERR | POLLHUP)) {
      rc = EPIPE;
      break;
    }
  }
  if (written != nullptr) *written = done;
  return rc;
}

}  // namespace dshpty::proc
