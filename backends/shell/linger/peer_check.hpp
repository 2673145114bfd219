// Who may attach a lingering session (docs/outlive.md, "Who may attach"): a peer of the
// rendezvous socket is refused unless it runs as this uid (SO_PEERCRED) and outside every
// session's tree. A session's commands run as the same user, so the uid alone would let
// one session take over another: every session's tree lives under a dshpty-supervisor
// subreaper (orphans reparent to it, never past it), so a peer with a dshpty-supervisor
// among its ancestors is inside a session and refused (the peer itself may be one: a reconnecting remote
// host's relay).
#pragma once

#include <string>

#include "dshpty/result.hpp"

namespace dshpty::linger {

// `fd` is an accepted AF_UNIX stream socket; `supervisor_exe` the helper's own executable
// (/proc/self/exe). PERMISSION_DENIED-like refusals come back as BACKEND_FAILED with the
// reason ("peer uid 1001 is not 1000", "peer pid 42 runs inside a dshpty session").
Status check_peer(int fd, const std::string& supervisor_exe);

}  // namespace dshpty::linger
