#include "proc/relayed_input.hpp"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "proc/procfs.hpp"

namespace dshpty::proc {

ino_t unix_peer_inode(ino_t ino) {
  int s = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (s < 0) return 0;
  struct {
    struct nlmsghdr header;
    struct unix_diag_req request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.request.sdiag_family = AF_UNIX;
  message.request.udiag_states = ~0u;
  message.request.udiag_ino = static_cast<__u32>(ino);
  message.request.udiag_show = UDIAG_SHOW_PEER;
  message.request.udiag_cookie[0] = ~0u;  // INET_DIAG_NOCOOKIE: look it up by inode alone
  message.request.udiag_cookie[1] = ~0u;
  ino_t peer = 0;
  alignas(struct nlmsghdr) char reply[1024];
  ssize_t n = -1;
  if (::send(s, &message, sizeof message, 0) == static_cast<ssize_t>(sizeof message)) {
    // The kernel answers within the send: never wait for it.
    while ((n = ::recv(s, reply, sizeof reply, MSG_DONTWAIT)) < 0 && errno == EINTR) {
    }
  }
  ::close(s);
  if (n < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(struct unix_diag_msg)))) return 0;
  const auto* header = reinterpret_cast<const struct nlmsghdr*>(reply);
  // An error (ENOENT: no UNIX socket has this inode) or anything unexpected: no peer.
  if (!NLMSG_OK(header, static_cast<unsigned>(n)) || header->nlmsg_type != SOCK_DIAG_BY_FAMILY) return 0;
  const auto* diag = static_cast<const struct unix_diag_msg*>(NLMSG_DATA(header));
  if (diag->udiag_ino != static_cast<__u32>(ino)) return 0;
  int left = static_cast<int>(header->nlmsg_len - NLMSG_LENGTH(sizeof *diag));
  for (auto* attr = reinterpret_cast<const struct rtattr*>(diag + 1); RTA_OK(attr, left); attr = RTA_NEXT(attr, left)) {
    if (attr->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(attr) >= sizeof(__u32)) {
      __u32 value = 0;
      std::memcpy(&value, RTA_DATA(attr), sizeof value);
      peer = value;
    }
  }
  return peer;
}

bool RelayedInputs::relayed(int fd, const struct stat& st) {
  if (S_ISCHR(st.st_mode)) return major(st.st_rdev) != 1 && st.st_rdev != terminal_;
  if (S_ISFIFO(st.st_mode)) return !opened_read_write(fd) && !holds_other(fd, st.st_dev, st.st_ino);
  if (S_ISSOCK(st.st_mode)) {
    const ino_t peer = unix_peer_inode(st.st_ino);
    // Both ends of a socketpair live on the same socket file system.
    return peer == 0 || !holds_other(fd, st.st_dev, peer);
  }
  return false;
}

bool RelayedInputs::opened_read_write(int fd) const {
  char buf[512];
  if (procfs::read_small(procfs::Path(pid_).text("/fdinfo/").number(fd).c_str(), buf, sizeof buf) <= 0) return false;
  const char* flags = std::strstr(buf, "flags:");
  unsigned value = 0;
  return flags && std::sscanf(flags, "flags: %o", &value) == 1 && (value & O_ACCMODE) == O_RDWR;
}

bool RelayedInputs::holds_other(int fd, dev_t dev, ino_t ino) {
  if (!listed_) {
    listed_ = true;
    int seen = 0;
    listing_complete_ = procfs::for_each_numeric_entry(procfs::Path(pid_).text("/fd").c_str(), [&](pid_t n) {
      if (++seen > kMaxOwnFds) return true;
      struct stat st {};
      if (::stat(procfs::Path(pid_).text("/fd/").number(n).c_str(), &st) == 0)
        own_.push_back({static_cast<int>(n), {st.st_dev, st.st_ino}});
      return false;
    }) && seen <= kMaxOwnFds;
  }
  if (!listing_complete_) return false;  // not proven a self-pipe: counted as relayed
  for (const auto& [n, id] : own_)
    if (n != fd && id.first == dev && id.second == ino) return true;
  return false;
}

}  // namespace dshpty::proc
