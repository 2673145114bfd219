#include "sandbox/seccomp_filter.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <unistd.h>

#include <initializer_list>

namespace dshpty::shell {

namespace {

Error filter_error(const std::string& what, int rc) {
  // libseccomp returns negative errno values.
  return make_system_error(Code::BACKEND_FAILED, "seccomp filter: " + what, rc < 0 ? -rc : EINVAL);
}

class FilterContext {
 public:
  FilterContext() : ctx_(seccomp_init(SCMP_ACT_ALLOW)) {}
  ~FilterContext() {
    if (ctx_) seccomp_release(ctx_);
  }
  FilterContext(const FilterContext&) = delete;
  FilterContext& operator=(const FilterContext&) = delete;
  scmp_filter_ctx get() const { return ctx_; }

 private:
  scmp_filter_ctx ctx_;
};

// A rule on one system call, with its argument comparisons (all must hold).
Status refuse(scmp_filter_ctx ctx, int err, const char* name,
              std::initializer_list<scmp_arg_cmp> args = {}) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return filter_error(std::string("unknown system call ") + name, -EINVAL);
  int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(static_cast<uint32_t>(err)), nr,
                                  static_cast<unsigned>(args.size()), args.begin());
  if (rc < 0) return filter_error(std::string("rule for ") + name, rc);
  return {};
}

// The kernel reads an ioctl request as 32 bits; the filter sees the whole register. Masking
// the compare to the low half refuses the request however its upper bits are spelt.
scmp_arg_cmp low32_is(unsigned int arg, uint32_t value) {
  return SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, 0xffffffffULL, value);
}

Status add_rules(scmp_filter_ctx ctx) {
  // Terminal input injection into whatever reads the terminal, and the console's
  // selection and keyboard tricks.
  // TIOCSETD too: a line discipline other than N_TTY (the kernel's serial, radio and CAN
  // protocols) is kernel attack surface a shell never needs. Its argument is a pointer, out
  // of a filter's reach, so the request is refused whatever it asks (`N_TTY` included; a
  // terminal is in N_TTY from its start).
  for (unsigned long request : {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX),
                                static_cast<unsigned long>(TIOCSETD)}) {
    if (Status st = refuse(ctx, EPERM, "ioctl", {low32_is(1, static_cast<uint32_t>(request))}); !st) return st;
  }
  // The kernel keyring is shared by every process of the user: a way out, and secrets in.
  // Namespaces and mounts would let the session rearrange what it sees; io_uring, perf,
  // bpf, userfaultfd and syslog are kernel attack surface a shell never needs.
  for (const char* name : {"keyctl", "add_key", "request_key", "unshare", "setns", "mount",
                           "umount2", "pivot_root", "chroot", "io_uring_setup", "io_uring_enter",
                           "io_uring_register", "perf_event_open", "bpf", "userfaultfd", "syslog"}) {
    if (Status st = refuse(ctx, EPERM, name); !st) return st;
  }
  if (Status st = refuse(ctx, EPERM, "clone",
                         {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)});
      !st) {
    return st;
  }
  // clone3 passes its flags in memory, out of a filter's reach: refused as if the kernel
  // were older, so libc falls back to clone, which the rule above sees. The same for the
  // mount API that works on file descriptors.
  for (const char* name : {"clone3", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
                           "fspick", "mount_setattr"}) {
    if (Status st = refuse(ctx, ENOSYS, name); !st) return st;
  }
  // personality: PER_LINUX (0) and the query (0xffffffff) only. A 32-bit value other than
  // all zeros or all ones has some bit set whose next bit (cyclically) is clear; one masked
  // compare per such pair covers every such value. Values above 32 bits go too (the kernel
  // would truncate them).
  for (unsigned bit = 0; bit < 32; ++bit) {
    const uint64_t set = 1ULL << bit;
    const uint64_t next = 1ULL << ((bit + 1) % 32);
    if (Status st = refuse(ctx, EPERM, "personality", {SCMP_A0(SCMP_CMP_MASKED_EQ, set | next, set)}); !st) {
      return st;
    }
  }
  if (Status st = refuse(ctx, EPERM, "personality", {SCMP_A0(SCMP_CMP_GT, 0xffffffffULL)}); !st) return st;
  // socket(): unix, inet, inet6 and netlink; every other family, the unknown ones
  // included, is EAFNOSUPPORT, as on a kernel built without it.
  const int allowed[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
  int family = 0;
  for (int next_allowed : allowed) {
    for (; family < next_allowed; ++family) {
      if (Status st = refuse(ctx, EAFNOSUPPORT, "socket", {SCMP_A0(SCMP_CMP_EQ, static_cast<uint64_t>(family))}); !st) {
        return st;
      }
    }
    family = next_allowed + 1;
  }
  if (Status st = refuse(ctx, EAFNOSUPPORT, "socket", {SCMP_A0(SCMP_CMP_GE, static_cast<uint64_t>(family))}); !st) {
    return st;
  }
  // Netlink: route only (`ip` reads addresses and routes with it). sock_diag would list the
  // host's listeners and socket paths with the network on; audit, netfilter, uevents and
  // the generic families are the host's business. Any other protocol (the whole register:
  // a value the kernel would truncate to 0 is refused too) is EPROTONOSUPPORT, which libaudit
  // and friends read as "not in this kernel".
  return refuse(ctx, EPROTONOSUPPORT, "socket",
                {SCMP_A0(SCMP_CMP_EQ, static_cast<uint64_t>(AF_NETLINK)),
                 SCMP_A2(SCMP_CMP_NE, static_cast<uint64_t>(NETLINK_ROUTE))});
}

}  // namespace

Result<std::shared_ptr<const std::string>> build_seccomp_program() {
  FilterContext ctx;
  if (!ctx.get()) return filter_error("seccomp_init", -ENOMEM);
  // Another ABI's system calls (int 0x80 from a 64-bit process, x32) are not in the
  // native table the rules above are written for: the process is killed instead.
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc < 0) return filter_error("bad-architecture action", rc);
  // bwrap sets no_new_privs itself before it installs the program.
  rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);
  if (rc < 0) return filter_error("no_new_privs attribute", rc);
  if (Status st = add_rules(ctx.get()); !st) return st.error();

  // libseccomp 2.5 exports only to a file descriptor: a memfd, read back once.
  int fd = ::memfd_create("dshpty-seccomp-build", MFD_CLOEXEC);
  if (fd < 0) return make_system_error(Code::BACKEND_FAILED, "seccomp filter: memfd", errno);
  rc = seccomp_export_bpf(ctx.get(), fd);
  if (rc < 0) {
    ::close(fd);
    return filter_error("export", rc);
  }
  std::string bytes;
  char buf[4096];
  ssize_t n;
  off_t at = 0;
  while ((n = ::pread(fd, buf, sizeof buf, at)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) {
      bytes.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
  }
  int err = errno;
  ::close(fd);
  if (n < 0) return make_system_error(Code::BACKEND_FAILED, "seccomp filter: read back", err);
  if (bytes.empty() || bytes.size() % 8 != 0) return filter_error("empty or torn program", -EINVAL);
  return std::make_shared<const std::string>(std::move(bytes));
}

}  // namespace dshpty::shell
