// The control protocol between the host side (local/local_channel.cpp) and
// dshpty-supervisor.
// This comment is its one definition.
//
// Transport: an AF_UNIX SOCK_SEQPACKET socketpair made CLOEXEC by the host. Every message
// is one fixed-size ControlMessage datagram (no framing, no partial reads). The helper gets
// its end as fd 3; the PTY slave is its fds 0, 1 and 2; it has no other fd.
//
// Helper command line:
//   dshpty-supervisor [--tty-from-socket] [--cwd DIR] [CGROUP FLAGS] -- SHELL_PATH [SHELL_ARGS...]
// CGROUP FLAGS (limits/cgroup_wire.hpp): the session's cgroup directories, which the host
// made (inherited fds from 5 on), and the limits; the helper writes the limits before the
// shell starts and moves the shell's child in before its exec. The host removes them.
// The helper's own environment is the shell's environment (built by the host).
// --tty-from-socket (a confined session, sandbox/sandbox.hpp): the slave is not on 0..2;
// the first message is `tty`, which carries it, and the helper waits for it before
// anything else (EOF instead: the host is gone, exit).
//
// helper -> host
//   started      a = shell pid           the shell was forked and execve() succeeded
//   start_failed a = StartStage, b = errno  chdir or execve failed in the shell's child;
//                                        the helper then waits for kill like any session
//   exited       a = raw wait status     the shell (not any other descendant) was reaped
//   quiescent                            after kill: every descendant is reaped (waitpid
//                                        said ECHILD); the helper exits right after
//   limit_hit    a = LimitKind           the session's cgroup refused a fork (pids) or its
//                                        OOM killer ended a process (memory); any time
// start_failed with a = kCgroupStageBase + CgroupStep (limits/session_cgroup.hpp): the
// session cgroup could not be made; the shell was never started.
// host -> helper
//   tty          SCM_RIGHTS: the PTY slave   only with --tty-from-socket, sent once, first
//   kill         a = grace in ms         SIGHUP, SIGTERM and SIGCONT to every descendant,
//                                        then after the grace SIGKILL to every descendant,
//                                        repeated until none is left; then `quiescent`.
//                                        A second kill may only shorten the grace.
//   EOF on the socket (the host closed it or died) = kill with no grace.
//
// The helper ignores HUP, INT, TERM and QUIT so that a signal meant for the session cannot
// orphan the tree; the shell gets every signal reset to default before execve().
#pragma once

#include <cstdint>

namespace dshpty::shell_protocol {

enum class Type : std::int32_t { started = 1, start_failed, exited, quiescent, kill, tty, limit_hit };
// watch_instances: the helper could take no inotify instance to watch its shell read the
// integration (the user's are used up); the shell was never started.
enum class StartStage : std::int32_t { chdir = 1, exec, fork, integration, watch_instances };
inline constexpr std::int32_t kCgroupStageBase = 16;
enum class LimitKind : std::int32_t { pids = 1, memory };

struct ControlMessage {
  Type type;
  std::int32_t a = 0;
  std::int32_t b = 0;
};

inline constexpr int kSocketFd = 3;

}  // namespace dshpty::shell_protocol
