// `dshpty-repl watch [NAME|ID]` and `watch --list` (docs/watch.md): a person's read-only
// view of a running host's session, from another terminal of the same user. It finds hosts
// by their watch sockets in the state directory (checked as the host checks it: 0700, this
// uid), asks each for its sessions, and mirrors the one named until the session ends, the
// host goes away, or the person presses q or Ctrl-C. It sends nothing after its request:
// no key the person types reaches the session.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include <nlohmann/json.hpp>

namespace dshpty::watch {

struct WatchArgs {
  bool list = false;
  bool help = false;
  std::string state_dir;  // "" : the default
  std::string word;       // a session's id or name, or HOSTPID/ID; "" : the only one
};

// `watch`'s own words (after "watch"). INVALID_ARGUMENT naming what is wrong.
Result<WatchArgs> parse_watch_args(const std::vector<std::string_view>& args);

// One session a host offers, with the socket it came from.
struct Offered {
  std::string socket;
  long host = 0;
  nlohmann::json session;  // sessionId, name, owner, type, status, activity, rows, cols, observers
};

// Every session of every live host in the state directory. Hosts that do not answer (a
// dead host's socket) are skipped; BACKEND_FAILED for an unsafe state directory.
Result<std::vector<Offered>> discover(const std::string& state_dir);

// The one session `word` names among `offered` (an id, a name, or HOSTPID/ID; "" when only
// one is offered). NO_SESSION or INVALID_ARGUMENT (ambiguous) in words a person reads.
Result<Offered> choose(const std::vector<Offered>& offered, const std::string& word);

// The whole command: prints to stdout/stderr and returns the exit status.
int run_watch(const std::vector<std::string_view>& args);

}  // namespace dshpty::watch
