// Is an fd a process waits on for input, beside the terminal, an input it relays? The
// stdin probe asks this of a process asleep in poll/select/epoll on the terminal *and*
// other fds: ssh (the terminal and its socket), script and apt (the terminal and a PTY
// master), sudo with use_pty. Such a process wakes for output from the far
// side as readily as for the user's keys, so its sleep proves nobody waits for the user.
//
// What counts (from the fd's stat and, for pipes and sockets, whose the other end is):
//   a socket            unless it is a UNIX socket whose peer this process holds too (a
//                       socketpair it signals itself with: asyncio's self-pipe, libevent's
//                       signal pair); the peer comes from the kernel's sock_diag netlink
//                       (UNIX_DIAG_PEER). Where that cannot be asked, every socket counts.
//   a pipe or FIFO      unless this process holds it twice (both ends of a self-pipe: libuv's
//                       and Go's wake-up pipes) or opened it read-write (fish's notifier FIFO)
//   a character device  other than the terminal and the memory devices (major 1: null,
//                       zero, random): a PTY master, another terminal, a serial line
//   anything else       no: eventfd, signalfd, timerfd, inotify, pidfd, a regular file
// Wrong answers fall on the safe side: an input taken for a relayed one makes a send
// settle by quiet output instead of at once; never a false "waits for the user".
//
// Cost: one stat per waited fd (the probe's already); a pipe or a UNIX socket adds a listing
// of the process's fds (one stat each, at most kMaxOwnFds, once per process and check) and a
// socket one netlink round trip. Only for a sleep on the terminal together with other fds.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <utility>
#include <vector>

namespace dshpty::proc {

class RelayedInputs {
 public:
  RelayedInputs(pid_t pid, dev_t terminal) noexcept : pid_(pid), terminal_(terminal) {}

  // Whether fd `fd` of the process, stat'ed (through /proc/<pid>/fd/<fd>) as `st`, is an
  // input it relays, as above. `st` must not be the terminal itself.
  bool relayed(int fd, const struct stat& st);

  // At most this many of the process's fds are listed for a self-pipe check; a process
  // with more counts its pipes and UNIX sockets as relayed.
  static constexpr int kMaxOwnFds = 1024;

 private:
  bool holds_other(int fd, dev_t dev, ino_t ino);  // another fd of the process is (dev, ino)
  bool opened_read_write(int fd) const;

  pid_t pid_;
  dev_t terminal_;
  bool listed_ = false;
  bool listing_complete_ = false;
  std::vector<std::pair<int, std::pair<dev_t, ino_t>>> own_;  // fd -> (dev, ino)
};

// The inode of the peer of the UNIX socket with inode `ino`, from sock_diag; 0 when it has
// none, is not a UNIX socket, or the kernel cannot say.
ino_t unix_peer_inode(ino_t ino);

}  // namespace dshpty::proc
