#include "link/write_all.hpp"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

namespace dshpty::link {

std::size_t write_all(int fd, std::string_view bytes, Deadline deadline) {
  using namespace std::chrono;
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) break;
    int wait_ms = -1;
    if (deadline) {
      const auto left = duration_cast<milliseconds>(*deadline - steady_clock::now()).count();
      if (left <= 0) break;
      wait_ms = static_cast<int>(left);
    }
    pollfd p{fd, POLLOUT, 0};
    const int rc = ::poll(&p, 1, wait_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0 || (p.revents & (POLLERR | POLLHUP))) break;
  }
  return done;
}

}  // namespace dshpty::link
