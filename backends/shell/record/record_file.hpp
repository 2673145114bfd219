// Where a recording goes: a new file inside the operator's directory, named by the owner's
// label, the session id and the start time (each part reduced to [A-Za-z0-9._-], so no
// label can name another directory), created O_EXCL|O_NOFOLLOW: never over an existing
// file, never through a symbolic link planted under the name.
#pragma once

#include <ctime>
#include <string>
#include <string_view>

#include "dshpty/result.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell::record {

// `part` as a safe file-name piece: other bytes become '_', a leading '.' too, at most 64
// bytes; empty becomes "_".
std::string sanitize_name_part(std::string_view part);

// OWNER-SESSION-YYYYmmddTHHMMSSZ.cast (UTC), "-N" before ".cast" for attempt N > 1.
std::string recording_file_name(std::string_view owner, std::string_view session_id, std::time_t start,
                                unsigned attempt = 1);

struct RecordingFile {
  proc::UniqueFd fd;  // write-only, non-blocking, close-on-exec
  std::string path;
};

// Creates the file in `dir` (mode 0600), the next attempt's name when one exists already.
// INVALID_ARGUMENT naming "record" when `dir` is missing or no directory; BACKEND_FAILED
// naming the path otherwise.
Result<RecordingFile> create_recording_file(const std::string& dir, std::string_view owner,
                                            std::string_view session_id, std::time_t start);
// The same, relative to `dir_fd` (RecordDir's, held from the host's start): `dir` only names
// the directory in paths and messages.
Result<RecordingFile> create_recording_file_at(int dir_fd, const std::string& dir, std::string_view owner,
                                               std::string_view session_id, std::time_t start);

}  // namespace dshpty::shell::record
