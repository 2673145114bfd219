// Where a recording goes: a new file inside the operator's directory, named by the owner's
// label, the session id, the start time (each part reduced to [A-Za-z0-9._-], so no label
// can name another directory) and a random part nobody can predict (so names planted ahead
// cannot block a spawn), created O_EXCL|O_NOFOLLOW: never over an existing file, never
// through a symbolic link planted under the name.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <string>
#include <string_view>

#include "dshpty/result.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell::record {

// `part` as a safe file-name piece: other bytes become '_', a leading '.' too, at most 64
// bytes; empty becomes "_".
std::string sanitize_name_part(std::string_view part);

// OWNER-SESSION-YYYYmmddTHHMMSSZ-UNIQUE.cast (UTC); UNIQUE is [0-9a-f] only.
std::string recording_file_name(std::string_view owner, std::string_view session_id, std::time_t start,
                                std::string_view unique);

// kUniqueHexDigits random hex digits (proc/random_hex.hpp): a name's unpredictable part;
// BACKEND_FAILED naming getrandom when none can be drawn.
inline constexpr std::size_t kUniqueHexDigits = 8;
Result<std::string> random_name_part();

struct RecordingFile {
  proc::UniqueFd fd{};  // write-only, non-blocking, close-on-exec
  std::string path{};
  // What removing it again takes (a spawn that failed after the file was made): its
  // directory (a duplicate of the held descriptor), its name there and its inode.
  proc::UniqueFd dir{};
  std::string name{};
  dev_t dev = 0;
  ino_t ino = 0;
};

// Creates the file in `dir` (mode 0600), with a new random part when the name exists already
// (kMaxAttempts times).
// INVALID_ARGUMENT naming "record" when `dir` is missing or no directory; BACKEND_FAILED
// naming the path otherwise (or getrandom, when no random part can be drawn).
Result<RecordingFile> create_recording_file(const std::string& dir, std::string_view owner,
                                            std::string_view session_id, std::time_t start,
                                            Result<std::string> (*unique)() = random_name_part);
// The same, relative to `dir_fd` (RecordDir's, held from the host's start): `dir` only names
// the directory in paths and messages.
// `unique` draws each attempt's random part (tests give a predictable one).
Result<RecordingFile> create_recording_file_at(int dir_fd, const std::string& dir, std::string_view owner,
                                               std::string_view session_id, std::time_t start,
                                               Result<std::string> (*unique)() = random_name_part);

}  // namespace dshpty::shell::record
