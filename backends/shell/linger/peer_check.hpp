// Who may attach a lingering session (docs/outlive.md, "Who may attach"): a peer of the
// rendezvous socket is refused unless it runs as this uid (SO_PEERCRED) and outside every
// session's tree. A session's commands run as the same user, so the uid alone would let
// one session take over another. A session's tree is recognised by the marks every helper
// sets (session_mark.hpp), not by where the helper lives: a peer whose own limits carry the
// tree's mark, or with a helper among its ancestors (orphans reparent to the helper, a
// subreaper, never past it), is inside a session and refused. The peer itself may be named
// like a helper: a reconnecting remote host's relay is the helper's --stdio face.
#pragma once

#include <sys/types.h>

#include "dshpty/result.hpp"

namespace dshpty::linger {

// A file by identity: the same (device, inode) under any name.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool known = false;
};

// The running program's file (/proc/self/exe); unknown when it cannot be seen.
FileId own_executable();

// `fd` is an accepted AF_UNIX stream socket; `helper_file` the helper's executable (an
// ancestor running that very file counts as a helper even if an older build set no mark).
// Refusals come back as BACKEND_FAILED with the reason ("peer uid 1001 is not 1000", "peer
// pid 42 runs inside a dshpty session (...)").
Status check_peer(int fd, const FileId& helper_file);

}  // namespace dshpty::linger
