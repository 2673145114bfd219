// pidfd system calls. glibc 2.36's <sys/pidfd.h> declares them without extern "C", so C++
// cannot link against it; go through syscall(2) instead.
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace dshpty::sys {

inline int pidfd_open(pid_t pid, unsigned flags) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, flags));
}

inline int pidfd_send_signal(int pidfd, int signo) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signo, nullptr, 0u));
}

}  // namespace dshpty::sys
