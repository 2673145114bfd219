// What a lingering session leaves in the state directory (docs/outlive.md, "The
// rendezvous"), written by its helper and read by hosts:
//
//   KEY.sock   the helper's listening socket (a host attaches through it)
//   KEY.info   who the session is: its owner label, name, backend type, shell pid, linger,
//              whether a host holds it and when it expires if none does, and the token an
//              attach must present. Mode 0600, replaced atomically (rename).
//   KEY.tomb   how it ended once linger ran out or the shell exited while no host held it:
//              a late attach of its owner gets this answer, and consumes it.
//   KEY.remote a lingering remote session, in its host's directory (KEY is the far
//              session's): the host that holds it (helper_pid is that host's pid), the
//              token of the next attach, and what a restarted host needs to take it back
//              over the same backend's transport. Written by the host.
//
// Both files are lines of NAME=VALUE; a value escapes '%', '\n' and '\r' as %XX, so no
// value can add a line. KEY is [0-9a-f]{16}.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"

namespace dshpty::linger {

struct SessionRecord {
  std::string key;
  std::string owner;
  std::optional<std::string> name;
  std::string type = "shell";
  std::int32_t helper_pid = -1;
  std::int32_t shell_pid = -1;
  std::uint32_t rows = 0, cols = 0;  // the terminal's size
  std::uint32_t linger_seconds = 0;
  bool attached = false;
  std::int64_t expires_at = 0;  // CLOCK_REALTIME seconds; meaningful while not attached
  std::string token;            // hex
  // The shell's mark nonce and dialect (bash, zsh, fish), for the next host's readiness.
  std::string mark_nonce;
  std::string shell;
};

struct Tombstone {
  std::string key;
  std::string owner;
  std::optional<std::string> name;
  std::string type = "shell";
  std::optional<int> exit_code;
  std::optional<int> signal;    // the signal number
  std::string reason;           // "killed after linger", "exited while no host held it"
  std::string proof;            // what proved the tree gone
  std::int64_t ended_at = 0;    // CLOCK_REALTIME seconds
};

// How long a tombstone nobody asked for is kept: swept by the next listing after that.
inline constexpr std::int64_t kTombstoneSeconds = 24 * 3600;

std::string socket_path(const std::string& dir, const std::string& key);
std::string info_path(const std::string& dir, const std::string& key);
std::string tomb_path(const std::string& dir, const std::string& key);
std::string remote_path(const std::string& dir, const std::string& key);

// A session's KEY: lowercase hex digits, this many. Whatever a host or a peer names is
// checked with is_session_key before it becomes part of a path.
inline constexpr std::size_t kKeyDigits = 16;
bool is_session_key(std::string_view key);

// Writes the file (0600) through a temporary name and rename(2).
Status write_record(const std::string& dir, const SessionRecord& record);
Status write_tombstone(const std::string& dir, const Tombstone& tomb);
// KEY.remote: the same fields as KEY.info.
Status write_remote_record(const std::string& dir, const SessionRecord& record);
Result<SessionRecord> read_record(const std::string& path);
Result<Tombstone> read_tombstone(const std::string& path);

// Every KEY.info and KEY.tomb of the directory (unreadable or foreign-looking files are
// skipped); tombstones older than kTombstoneSeconds are removed on the way.
struct Listing {
  std::vector<SessionRecord> sessions;
  std::vector<Tombstone> tombstones;
  std::vector<SessionRecord> remotes;  // KEY.remote
};
Result<Listing> list_records(const std::string& dir);

// Constant-time comparison for tokens.
bool same_token(const std::string& a, const std::string& b);

}  // namespace dshpty::linger
