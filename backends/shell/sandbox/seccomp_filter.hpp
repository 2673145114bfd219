// The system-call filter of a confined session (docs/security.md, "The system-call filter"):
// built with libseccomp, exported as classic BPF, and handed to bubblewrap, which installs
// it (after no_new_privs) on the helper it starts. The host never loads it itself. The
// helper (dshpty-supervisor) runs under it too, so nothing it needs is refused: pidfd_open,
// waitid, prctl, kill, setsid, ioctl(TIOCSCTTY), sendmsg/recvmsg are all left alone.
//
// The default is to allow; what is refused, and how:
//   EPERM        ioctl TIOCSTI and TIOCLINUX (the low 32 bits compared, so the 64-bit
//                spelling of the request is refused too); keyctl, add_key, request_key;
//                unshare, setns, mount, umount2, pivot_root, chroot; clone with
//                CLONE_NEWUSER; io_uring_setup/enter/register; perf_event_open, bpf,
//                userfaultfd, syslog; personality other than PER_LINUX or the query
//   ENOSYS       clone3 (its flags sit in memory a filter cannot read; libc falls back to
//                clone on ENOSYS) and the new mount API (open_tree, move_mount, fsopen,
//                fsconfig, fsmount, fspick, mount_setattr)
//   EAFNOSUPPORT socket() of any family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK
//                (AF_VSOCK reaches the hypervisor whatever the network namespace says)
// System calls of another ABI (x86's int 0x80, x32) kill the process: the filter only
// knows the native table, and a gap there would undo all of the above.
#pragma once

#include <memory>
#include <string>

#include "dshpty/result.hpp"

namespace dshpty::shell {

// The filter as BPF bytes (struct sock_filter[]), ready for bwrap's --seccomp. Built once
// per backend. BACKEND_FAILED naming the cause when libseccomp refuses.
Result<std::shared_ptr<const std::string>> build_seccomp_program();

}  // namespace dshpty::shell
