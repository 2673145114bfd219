// One fd passed over a unix socket beside a fixed-size message (SCM_RIGHTS): how the host
// hands the PTY slave to a confined helper (link/protocol.hpp, `tty`). Both halves are
// here, so the control message is laid out once. System calls only, so the supervisor
// helper includes it too.
#pragma once

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace dshpty::proc {

// Sends the `size` bytes at `message` with `fd` attached: 0, or the errno (EMSGSIZE for
// a short send). A gone peer is EPIPE, never SIGPIPE.
inline int send_with_fd(int socket_fd, const void* message, std::size_t size, int fd) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<void*>(message), size};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n;
  while ((n = ::sendmsg(socket_fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  if (n < 0) return errno;
  return n == static_cast<ssize_t>(size) ? 0 : EMSGSIZE;
}

// Receives exactly `size` bytes into `message` and the one fd that must come with them
// (O_CLOEXEC from birth): the fd, or -1 when the peer went away or sent anything else
// (every fd that came with a wrong message, or beside the one expected, is closed).
inline int receive_with_fd(int socket_fd, void* message, std::size_t size) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  iovec iov{message, size};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(socket_fd, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
  }
  if (n < 0) return -1;
  // Every fd that arrived is ours to close: CMSG_SPACE rounds up, so two fit where one was
  // asked for (on x86-64), and the kernel installs them all.
  int fd = -1;
  std::size_t fds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    // Never past the buffer, whatever the length says.
    const auto room = static_cast<std::size_t>(control + mh.msg_controllen -
                                               reinterpret_cast<char*>(CMSG_DATA(c)));
    const std::size_t count = std::min<std::size_t>(c->cmsg_len - CMSG_LEN(0), room) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int one;
      std::memcpy(&one, CMSG_DATA(c) + i * sizeof(int), sizeof one);
      if (++fds == 1) {
        fd = one;
      } else {
        ::close(one);
      }
    }
  }
  if (n != static_cast<ssize_t>(size) || fds != 1 || (mh.msg_flags & MSG_CTRUNC)) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace dshpty::proc
