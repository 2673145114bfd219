// Writing all of a buffer to an fd that may be full: the one loop for it (the far helper's
// last words, the attach relay's copies). It waits in poll, so it is for the helper program
// only, never the library on the host's loop; and it uses write(), so its caller ignores
// SIGPIPE (the helper does).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

namespace dshpty::link {

using Deadline = std::optional<std::chrono::steady_clock::time_point>;

// Writes `bytes` to `fd`, waiting while it is full until `deadline` (nullopt: none; a time
// already past: one pass that never waits). Returns how many bytes went out: all of them,
// or fewer on an error, a hang-up or the deadline.
std::size_t write_all(int fd, std::string_view bytes, Deadline deadline = std::nullopt);

}  // namespace dshpty::link
