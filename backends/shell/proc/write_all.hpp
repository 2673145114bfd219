// Writing a whole buffer to an fd, the one loop every writer that may not stop half-way
// uses: a memfd or a record file (the library), the helper's stderr and its relay.
// System calls only, so the supervisor helper includes it too.
#pragma once

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <cstddef>
#include <string_view>

namespace dshpty::proc {

// Writes all of `bytes`, retrying EINTR: 0, or the errno of the write that failed (EIO for
// one that wrote nothing). An fd that is non-blocking (a relay's stdout shared with
// whoever started it) is waited for with poll. The library calls it on files and memfds
// only, which never say EAGAIN: it never waits on the host's loop.
inline int write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    if (n < 0) return errno;
    if (n == 0) return EIO;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace dshpty::proc
