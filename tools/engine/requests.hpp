// The requests of the engine's operations, as plain values: what a face parsed from its
// input (a text command, a JSON request, an MCP tool call) before the engine runs it.
// The acting owner is not in them: every operation takes the owner's label beside them.
// Every member has a default initializer, so designated initializers are -Wextra clean.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "dshpty/session.hpp"

namespace dshpty::engine {

struct OpenRequest {
  std::string type{};  // the backend type, e.g. "shell"
  std::optional<std::string> name{};
  std::optional<std::string> cwd{};
  std::map<std::string, std::string> options{};  // the backend's own, passed as is
  Limits limits{};                               // the backend checks them (SpawnOptions::limits)
};

// The backend options every face takes on `open`: the text flag, and the key that is both
// the JSON (and MCP) field and the backend's option name. The backend checks the values.
struct OpenOption {
  std::string_view flag;
  std::string_view key;
  std::string_view value;  // its values, as a usage line shows them
};
inline constexpr OpenOption kOpenOptions[] = {
    {"--shell", "shell", "bash|zsh|fish|PATH"},
    {"--rc", "rc", "none|user"},
    {"--history", "history", "private|off|FILE"},
    {"--term", "terminal", "dumb|xterm"},
    {"--sandbox", "sandbox", "none|read-only|workspace-write"},
    {"--network", "network", "on|off"}};

struct SessionSend {
  std::string session_id{};
  SendRequest request{};  // an unset timeout or idle takes the engine's default
};

// A read of a send's output: from `offset` (bytes into its output; reading moves no
// cursor), or without one from the send's consuming cursor; at most max_bytes; waiting up
// to `wait` when nothing is new yet.
struct SendOutputRead {
  std::optional<std::uint64_t> offset{};
  std::optional<std::chrono::milliseconds> wait{};
  std::size_t max_bytes = 0;
};

struct SendOutputAnswer {
  OutputDelta delta{};             // the text; truncated when bytes were lost before it
  std::uint64_t next_offset = 0;   // where the next read by offset starts
  std::uint64_t dropped_bytes = 0; // by offset: bytes the retained window no longer had
  bool done = false;               // the send had ended (its face has its result)
  std::uint64_t output_end = 0;    // the send's bytes so far: past next_offset, more to read
};

struct SessionRead {
  std::string session_id{};
  ReadRequest request{};
};

struct SessionScreen {
  std::string session_id{};
};

struct SessionResize {
  std::string session_id{};
  unsigned rows = 0;
  unsigned cols = 0;
};

struct SessionSignal {
  std::string session_id{};
  Signal signal = Signal::sigint;
};

struct SessionClose {
  std::string session_id{};
};

}  // namespace dshpty::engine
