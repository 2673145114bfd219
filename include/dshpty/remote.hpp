// Remote shell backends: the same session as the local shell backend (dshpty/shell.hpp),
// with its processes on another machine. The host runs a transport (ssh, `podman exec -i`,
// `kubectl exec -i`, `sh -c`) whose stdin and stdout reach `dshpty-supervisor --stdio` on
// the far side; that helper owns the PTY and the process tree there and speaks frames
// (docs/remote.md). Every session operation is the local one's: sends and their readiness,
// reads, keys, screen, resize, signals, close with the tree's end proven by the far helper.
// When the link ends first, the session's status turns `lost` with the transport's words,
// and a close that had no proof from the far side fails saying so.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dshpty/backend.hpp"
#include "dshpty/shell.hpp"

struct ev_loop;

namespace dshpty {

struct RemoteConfig {
  // The backend's type, as spawns name it ("ssh:buildbox"). Must not be empty.
  std::string type;
  // The transport's argv; argv[0] is looked up in PATH. Its stdin and stdout are the link
  // (a socket), its stderr is kept (bounded) for the words of a failure.
  // e.g. {"ssh", "-T", "-o", "BatchMode=yes", "buildbox", "dshpty-supervisor", "--stdio"}.
  std::vector<std::string> transport;
  // The far shell and the terminal layer: argv, cwd (on the far side), rows, cols,
  // terminal, env (overrides applied to the far helper's environment), the timeouts and
  // bounds, on_raw_output. supervisor_path and the sandbox fields are not used (a
  // confined far session is a transport running bwrap).
  ShellConfig shell;
  // An idle link is pinged this often, and declared dead after link_timeout without a
  // frame from the far side (the far helper applies the same bound to the host).
  std::chrono::milliseconds ping_interval{10'000};
  std::chrono::milliseconds link_timeout{30'000};
};

// A remote backend on `loop`. Spawn options: "rows", "cols", "terminal" as for the shell
// backend; any other is INVALID_ARGUMENT. A spawn fails with BACKEND_FAILED naming what
// failed: the transport could not start, it exited (its status and the last line of its
// stderr: "ssh exited 255: Permission denied (publickey)."), the far helper is missing or
// speaks another protocol version, or the far shell could not start.
std::shared_ptr<Backend> make_remote_backend(struct ev_loop* loop, RemoteConfig config);

}  // namespace dshpty
