// The command-line options every face of the tools takes for its sessions (--shell, --cwd,
// --rows, --cols, --idle-ms, --timeout-ms, --max-result-bytes, --remote NAME=COMMAND,
// --remote-ping-ms, --remote-timeout-ms, --allow-socket, --protect, --sandbox, --network,
// --workspace, --writable-root, --env), and the reader of
// "--opt VALUE" / "--opt=VALUE" words they share. Pure: parsed into values, never printed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "dshpty/session.hpp"
#include "render/result_cap.hpp"

namespace dshpty::tool {

// One --remote NAME=COMMAND: a remote backend of type NAME whose transport is COMMAND's words.
struct RemoteOption {
  std::string name;
  std::vector<std::string> transport;
};

struct SessionOptions {
  std::optional<std::string> shell;  // ShellConfig::shell
  std::optional<std::string> rc;     // ShellConfig::rc: none or user
  std::optional<std::string> history;  // ShellConfig::history
  std::optional<std::string> cwd;
  std::optional<unsigned> rows;
  std::optional<unsigned> cols;
  std::optional<std::chrono::milliseconds> idle;
  std::optional<std::chrono::milliseconds> timeout;
  std::size_t max_result_bytes = render::kDefaultMaxResultBytes;
  // In the order given; names are unique and never "shell".
  std::vector<RemoteOption> remotes;
  // Every remote's link bounds (RemoteConfig::ping_interval, link_timeout); unset: the
  // backend's defaults.
  std::optional<std::chrono::milliseconds> remote_ping;
  std::optional<std::chrono::milliseconds> remote_timeout;
  // Confined sessions (ShellConfig::allow_sockets, protected_paths), in the order given.
  std::vector<std::string> allow_sockets;    // --allow-socket PATH (absolute)
  std::vector<std::string> protected_paths;  // --protect PATH
  // The operator's policy (docs/security.md): --sandbox MODE is the default mode and the
  // floor; --network off the default and the floor, on the default only; --workspace DIR
  // where a confined cwd may be (none: --cwd, else our start directory); --writable-root DIR
  // writable besides the cwd in workspace-write; --env NAME passed into every session.
  std::optional<std::string> sandbox;
  std::optional<bool> network;
  std::vector<std::string> workspaces;
  std::vector<std::string> writable_roots;
  std::vector<std::string> env_pass;
  // --limit-pids N, --limit-memory BYTES, --limit-cpu F: each a session's default and its
  // ceiling (ShellConfig::limits, limit_ceilings; docs/security.md "Resource limits").
  Limits limits;
  // --state-dir: where lingering sessions meet their next host (docs/outlive.md); unset:
  // the default.
  std::optional<std::string> state_dir;
  // --no-watch: nobody may watch this host's sessions (ShellConfig::watchable false, no watch
  // socket, no web page; docs/watch.md).
  bool watch = true;
  // --web ADDR:PORT: the web page (docs/watch.md); --web-allow-remote lets ADDR be other
  // than loopback.
  std::optional<std::string> web;
  bool web_allow_remote = false;
  // --record-dir DIR, --record-max-bytes N: recordings (ShellConfig::record_dir,
  // record_max_bytes; docs/watch.md "Recordings").
  std::optional<std::string> record_dir;
  std::optional<std::size_t> record_max_bytes;
};

// Walks `args` (without the program name) one option at a time. INVALID_ARGUMENT naming the
// option for a missing, unexpected or out-of-range value.
class ArgReader {
 public:
  explicit ArgReader(const std::vector<std::string_view>& args) : args_(args) {}

  // Moves to the next option; false at the end.
  bool next();
  // The option without its "=VALUE", e.g. "--cwd".
  std::string_view name() const noexcept { return name_; }
  // The whole word, as given.
  std::string_view word() const noexcept { return args_[index_]; }

  // A flag: it takes no value.
  Status flag(bool& field);
  Result<std::string_view> value();
  Result<std::uint64_t> number(std::uint64_t min, std::uint64_t max);

 private:
  const std::vector<std::string_view>& args_;
  std::size_t index_ = 0;
  bool started_ = false;
  std::string_view name_;
  std::optional<std::string_view> inline_value_;
};

// Parses the reader's current option into `options` when it is one of the session options:
// nullopt when it is not (the face handles it), else the outcome.
std::optional<Status> parse_session_option(ArgReader& reader, SessionOptions& options);

// "NAME=COMMAND" of --remote: COMMAND split by split_shell_words. INVALID_ARGUMENT for no
// '=', an empty NAME, NAME "shell" (the local backend's type) or one with blanks or control
// characters, an empty COMMAND or one that does not split (an unterminated quote).
Result<RemoteOption> parse_remote_option(std::string_view text);

// The checks across session options, once all are read: INVALID_ARGUMENT when
// --remote-ping-ms is not below --remote-timeout-ms (or its default).
Status check_session_options(const SessionOptions& options);


// The --help lines for the session options, ready to paste under "Options:".
std::string_view session_options_usage();

}  // namespace dshpty::tool
