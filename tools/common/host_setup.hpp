// What every tool program does before its face runs: the shell backend's configuration from
// the session options, the remote backends of --remote, the engine's settings, SIGPIPE made harmless, and stdin/stdout's
// file status flags restored at exit.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dshpty/remote.hpp"
#include "dshpty/service.hpp"
#include "dshpty/shell.hpp"
#include "engine.hpp"
#include "session_options.hpp"

namespace dshpty::tool {

// $DSHPTY_SUPERVISOR, else the helper of the build tree the program sits in, else "" (the
// backend's installed path).
std::string find_supervisor();

// The shell backend's configuration for these options (the helper found as above).
ShellConfig shell_config(const SessionOptions& options);

// One --remote's configuration: the far shell from the same options as the local one
// (--shell, --rows, --cols, --idle-ms, --timeout-ms; not --cwd, a path on this machine), the
// link bounds from --remote-ping-ms and --remote-timeout-ms (with only the timeout given,
// pings come at a third of it when that is sooner than the default).
RemoteConfig remote_config(const SessionOptions& options, const RemoteOption& remote);

// Registers the local shell backend (type "shell") with `local`, then one remote backend per
// --remote, in order, each with `local`'s on_raw_output hook. The first failure, naming the
// type; the service keeps what it took.
// `lingering`, when given, gets every backend whose sessions may linger: the local shell
// backend and each remote one.
Status register_backends(Service& service, struct ev_loop* loop, ShellConfig local, const SessionOptions& options,
                         std::vector<std::shared_ptr<Backend>>* lingering = nullptr);

// --idle-ms and --timeout-ms are the engine's defaults for a send, whatever its backend;
// --state-dir its state directory; the `lingering` backends are told to detach their
// lingering sessions when the host leaves (docs/outlive.md).
engine::Settings engine_settings(const SessionOptions& options,
                                 std::vector<std::shared_ptr<Backend>> lingering = {});

// Writing to a reader that went away must fail with EPIPE, not kill us before the sessions
// are torn down. A no-op handler (not SIG_IGN) so the shells we start get the default back.
void make_sigpipe_harmless();

// Raises the soft RLIMIT_NOFILE to the hard one: each session holds three or four fds on the
// host (docs/scale.md), so a thousand sessions outgrow the usual soft 1024. Returns the soft
// limit now in force; the hard limit is the operator's to raise.
unsigned long raise_fd_limit();

// Restores a descriptor's file status flags when it goes out of scope: O_NONBLOCK lives on
// the open file, shared with whoever started us.
class FlagsGuard {
 public:
  explicit FlagsGuard(int fd);
  ~FlagsGuard();
  FlagsGuard(const FlagsGuard&) = delete;
  FlagsGuard& operator=(const FlagsGuard&) = delete;
  void set_nonblocking() const;

 private:
  int fd_;
  int flags_;
};

}  // namespace dshpty::tool
