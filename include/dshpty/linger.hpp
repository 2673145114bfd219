// Sessions that outlive their host (docs/outlive.md). A shell session spawned with the
// option "linger" = N seconds (1..604800) keeps running for N seconds after its host went
// away (a crash, a kill, an exit that detached it), its output kept in a bounded ring; a
// later host of the same user finds it in the state directory and takes it over by
// spawning with the option "attach" = its key, under an owner of the same label. When the
// linger runs out, the tree is killed (with the usual proof) and a tombstone says so.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/backend.hpp"
#include "dshpty/result.hpp"
#include "dshpty/session.hpp"

namespace dshpty {

inline constexpr std::uint32_t kMaxLingerSeconds = 604'800;  // a week

// A lingering session as its rendezvous record describes it.
struct LingeringSession {
  std::string key;                 // for the spawn option "attach"
  std::string owner;               // the owner label it remembers; only that owner's attach takes it
  std::optional<std::string> name;
  std::string type;                // the backend type ("shell")
  std::optional<int> pid;          // its shell
  bool attached = false;           // a host holds it now
  std::chrono::seconds left{0};    // not attached: until linger runs out
};

// How a lingering session ended with no host attached: status is exited, with `reason`
// ("killed after linger": exit_code unset, signal SIGKILL; or the shell's own exit).
struct LingerTombstone {
  std::string key;
  std::string owner;
  std::optional<std::string> name;
  std::string type;
  SessionStatus status;
  std::string proof;  // what proved the tree gone
};

struct LingerListing {
  std::vector<LingeringSession> sessions;
  std::vector<LingerTombstone> tombstones;
};

// The state directory: `configured` (ShellConfig::state_dir) or, when empty,
// $XDG_RUNTIME_DIR/dshpty, else /tmp/dshpty-UID. Created 0700 when missing; BACKEND_FAILED
// naming the cause when it is not a directory owned by this uid with mode 0700 (or
// stricter).
Result<std::string> prepare_linger_state_dir(const std::string& configured);

// The owner label's lingering sessions and tombstones in the state directory (prepared as
// above, but never created: a directory that does not exist lists nothing), attached or
// not; tombstones older than a day are removed on the way. Errors as
// prepare_linger_state_dir.
Result<LingerListing> list_lingering(const std::string& configured, std::string_view owner_label);

// Removes a tombstone once its owner was told (a late attach consumes it).
void forget_linger_tombstone(const std::string& configured, const std::string& key);

// From this call on, a close of a lingering session of `backend` (a kill, an owner or
// service disposal) detaches it instead of killing it: the host is leaving and the session
// outlives it (a remote one's far helper takes the closed link as a cut, and the host's
// record stays for the next host). The tools call it on EOF, SIGTERM and SIGHUP.
// INVALID_ARGUMENT when `backend` is not one make_shell_backend or make_remote_backend
// returned.
Status detach_lingering_on_close(Backend& backend);

}  // namespace dshpty
