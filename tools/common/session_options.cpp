#include "session_options.hpp"

#include <sys/stat.h>

#include <charconv>
#include <cstdlib>

#include "dshpty/remote.hpp"
#include "dshpty/shell.hpp"
#include "engine.hpp"
#include "field_table.hpp"
#include "shell_words.hpp"

namespace dshpty::tool {

namespace {
Error bad(std::string message) { return make_error(Code::INVALID_ARGUMENT, std::move(message)); }

std::optional<std::uint64_t> parse_number(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}
}  // namespace

bool ArgReader::next() {
  if (started_) {
    ++index_;
  } else {
    started_ = true;
  }
  if (index_ >= args_.size()) return false;
  name_ = args_[index_];
  inline_value_.reset();
  if (const auto eq = name_.find('='); name_.rfind("--", 0) == 0 && eq != std::string_view::npos) {
    inline_value_ = name_.substr(eq + 1);
    name_ = name_.substr(0, eq);
  }
  return true;
}

Status ArgReader::flag(bool& field) {
  if (inline_value_) return bad(std::string(name_) + " takes no value");
  field = true;
  return {};
}

Result<std::string_view> ArgReader::value() {
  if (inline_value_) return *inline_value_;
  if (index_ + 1 >= args_.size()) return bad(std::string(name_) + " needs a value");
  return args_[++index_];
}

Result<std::uint64_t> ArgReader::number(std::uint64_t min, std::uint64_t max) {
  auto text = value();
  if (!text) return text.error();
  const auto n = parse_number(*text);
  if (!n || *n < min || *n > max)
    return bad(std::string(name_) + " must be a number from " + std::to_string(min) + " to " + std::to_string(max) +
               ", not \"" + std::string(*text) + "\"");
  return *n;
}

std::optional<Status> parse_session_option(ArgReader& reader, SessionOptions& options) {
  const std::string_view arg = reader.name();
  if (arg == "--shell" || arg == "--cwd") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (text->empty()) return Status(bad(std::string(arg) + " needs a non-empty path"));
    (arg == "--shell" ? options.shell : options.cwd) = std::string(*text);
    return Status();
  }
  if (arg == "--rc" || arg == "--history") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    (arg == "--rc" ? options.rc : options.history) = std::string(*text);
    return Status();
  }
  if (arg == "--web") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    options.web = std::string(*text);
    return Status();
  }
  if (arg == "--web-allow-remote") return reader.flag(options.web_allow_remote);
  if (arg == "--no-watch") {
    bool no_watch = false;
    if (Status st = reader.flag(no_watch); !st) return st;
    options.watch = false;
    return Status();
  }
  if (arg == "--state-dir") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (text->empty() || text->front() != '/') return Status(bad("--state-dir needs an absolute path"));
    options.state_dir = std::string(*text);
    return Status();
  }
  if (arg == "--record-dir") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (text->empty() || text->front() != '/') return Status(bad("--record-dir needs an absolute path"));
    options.record_dir = std::string(*text);
    return Status();
  }
  if (arg == "--record-max-bytes") {
    auto n = reader.number(4096, std::uint64_t{1} << 50);
    if (!n) return Status(n.error());
    options.record_max_bytes = static_cast<std::size_t>(*n);
    return Status();
  }
  if (arg == "--rows" || arg == "--cols") {
    auto n = reader.number(1, kMaxTerminalSide);
    if (!n) return Status(n.error());
    (arg == "--rows" ? options.rows : options.cols) = static_cast<unsigned>(*n);
    return Status();
  }
  if (arg == "--idle-ms" || arg == "--timeout-ms") {
    auto n = reader.number(1, engine::kMaxWaitMs);
    if (!n) return Status(n.error());
    (arg == "--idle-ms" ? options.idle : options.timeout) = std::chrono::milliseconds(*n);
    return Status();
  }
  if (arg == "--allow-socket" || arg == "--protect") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (text->empty()) return Status(bad(std::string(arg) + " needs a non-empty path"));
    if (arg == "--allow-socket" && text->front() != '/')
      return Status(bad("--allow-socket needs an absolute path, not \"" + std::string(*text) + "\""));
    (arg == "--allow-socket" ? options.allow_sockets : options.protected_paths).emplace_back(*text);
    return Status();
  }
  if (arg == "--sandbox") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (*text != "none" && *text != "read-only" && *text != "workspace-write")
      return Status(bad("--sandbox must be none, read-only or workspace-write, not \"" + std::string(*text) + "\""));
    options.sandbox = std::string(*text);
    return Status();
  }
  if (arg == "--network") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (*text != "on" && *text != "off")
      return Status(bad("--network must be on or off, not \"" + std::string(*text) + "\""));
    options.network = *text == "on";
    return Status();
  }
  if (arg == "--limit-pids" || arg == "--limit-memory" || arg == "--limit-cpu") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (arg == "--limit-cpu") {
      char* end = nullptr;
      const std::string value(*text);
      const double cpu = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(cpu > 0) || cpu > 1e9)
        return Status(bad("--limit-cpu needs a positive number of CPUs, not \"" + value + "\""));
      options.limits.cpu = cpu;
      return Status();
    }
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc() || end != text->data() + text->size() || value == 0)
      return Status(bad(std::string(arg) + " needs a positive whole number, not \"" + std::string(*text) + "\""));
    (arg == "--limit-pids" ? options.limits.pids : options.limits.memory) = value;
    return Status();
  }
  if (arg == "--workspace" || arg == "--writable-root") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (text->empty() || text->front() != '/')
      return Status(bad(std::string(arg) + " needs an absolute path, not \"" + std::string(*text) + "\""));
    (arg == "--workspace" ? options.workspaces : options.writable_roots).emplace_back(*text);
    return Status();
  }
  if (arg == "--env") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (text->empty() || text->find('=') != std::string_view::npos)
      return Status(bad("--env takes a variable's NAME (its value is the host's), not \"" + std::string(*text) + "\""));
    options.env_pass.emplace_back(*text);
    return Status();
  }
  if (arg == "--remote") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    auto remote = parse_remote_option(*text);
    if (!remote) return Status(remote.error());
    for (const auto& other : options.remotes)
      if (other.name == remote->name) return Status(bad("--remote: the name \"" + remote->name + "\" is given twice"));
    options.remotes.push_back(std::move(*remote));
    return Status();
  }
  if (arg == "--remote-ping-ms" || arg == "--remote-timeout-ms") {
    auto n = reader.number(1, engine::kMaxWaitMs);
    if (!n) return Status(n.error());
    (arg == "--remote-ping-ms" ? options.remote_ping : options.remote_timeout) = std::chrono::milliseconds(*n);
    return Status();
  }
  if (arg == "--max-result-bytes") {
    auto n = reader.number(render::kMinMaxResultBytes, render::kMaxMaxResultBytes);
    if (!n) return Status(n.error());
    options.max_result_bytes = static_cast<std::size_t>(*n);
    return Status();
  }
  return std::nullopt;
}

Result<RemoteOption> parse_remote_option(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos)
    return bad("--remote needs NAME=COMMAND, e.g. box='ssh -T box dshpty-supervisor --stdio', not \"" +
               std::string(text) + "\"");
  RemoteOption remote;
  remote.name = std::string(text.substr(0, eq));
  if (remote.name.empty()) return bad("--remote: the NAME before '=' is empty");
  if (remote.name == "shell") return bad("--remote: the name \"shell\" is the local backend's; choose another");
  for (const char c : remote.name)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return bad("--remote: the name \"" + remote.name + "\" has a blank or control character");
  auto words = split_shell_words(text.substr(eq + 1));
  if (!words) return bad("--remote " + remote.name + ": " + words.error()->message);
  if (words->empty()) return bad("--remote " + remote.name + ": the COMMAND is empty");
  remote.transport = std::move(*words);
  return remote;
}

Status check_session_options(const SessionOptions& options) {
  // The dialect, startup files and history are the backend's to check: the same words
  // then for a bad --shell as for a bad "shell" on open.
  std::map<std::string, std::string> shell_options;
  if (options.shell) shell_options["shell"] = *options.shell;
  if (options.rc) shell_options["rc"] = *options.rc;
  if (options.history) shell_options["history"] = *options.history;
  if (Status st = check_shell_options(shell_options); !st) return st;
  // Every session's recording goes there: a directory that is not one fails now, not each open.
  if (options.record_dir) {
    struct stat st {};
    if (::stat(options.record_dir->c_str(), &st) < 0 || !S_ISDIR(st.st_mode))
      return bad("--record-dir " + *options.record_dir + " is not an existing directory");
  }
  // A link pinged no sooner than it times out would be lost whenever it is idle.
  const auto timeout = options.remote_timeout.value_or(RemoteConfig{}.link_timeout);
  if (options.remote_ping && *options.remote_ping >= timeout)
    return bad("--remote-ping-ms (" + std::to_string(options.remote_ping->count()) +
               ") must be below --remote-timeout-ms (" + std::to_string(timeout.count()) +
               (options.remote_timeout ? ")" : ", the default)"));
  return {};
}

std::string_view session_options_usage() {
  return R"(  --shell SHELL           the sessions' shell: bash (the default), zsh, fish, or an
                          absolute path to one of them (no other shell: dshpty marks
                          each dialect's prompts)
  --rc none|user          the user's startup files (~/.bashrc, ~/.zshrc, config.fish):
                          none (the default, prompt "dsh> ") or user
  --history MODE          private (the default: in memory only), off, or a file path
  --cwd DIR               the sessions' default working directory (default: ours)
  --rows N, --cols N      the terminal size of new sessions (default 40 x 160)
  --idle-ms MS            silence that ends a send as inferred_idle (default 3000)
  --timeout-ms MS         a send's default deadline (default 30000)
  --max-result-bytes N    cut output longer than N bytes (default 262144 in
                          dshpty-repl, 30000 in dshpty-mcp; at least 64)
  --remote NAME=COMMAND   register a remote backend of type NAME (repeatable): COMMAND
                          is a transport to a far `dshpty-supervisor --stdio`, split
                          into words as a shell would (quotes, backslashes; no shell
                          is run), e.g. --remote box='ssh -T box dshpty-supervisor
                          --stdio'; then open NAME. --shell, --rows, --cols, --idle-ms
                          and --timeout-ms apply there too (--cwd does not)
  --remote-ping-ms MS     ping an idle link this often (default 10000; with only
                          --remote-timeout-ms, a third of it when that is less)
  --remote-timeout-ms MS  a link silent this long is lost (default 30000)
  --allow-socket PATH     a host unix socket confined sessions may reach (repeatable;
                          every other host socket is hidden from them)
  --protect PATH          read-only inside workspace-write's writable roots, besides .git
                          and .husky .pre-commit-config.yaml .envrc .vscode .idea
                          (repeatable; relative: in each root; !NAME leaves a default
                          out; .git: all of it read-only, no commits)
  --sandbox MODE          none (the default), read-only or workspace-write: the mode
                          of a session that names none, and the floor: a session
                          asking for less is refused
  --network on|off        a confined session's network (default off); off is also a
                          floor (a session asking for it is refused)
  --limit-pids N          per-session limits (a cgroup of the session's own): processes
  --limit-memory BYTES    and threads, memory, CPUs' worth of time (0.5: half of one);
  --limit-cpu F           each the default and the ceiling (a session may ask for less)
  --workspace DIR         where a confined session's cwd may be (repeatable; default:
                          --cwd, else the directory we started in); never / or $HOME,
                          never through a symbolic link
  --writable-root DIR     writable in workspace-write besides the cwd (repeatable)
  --env NAME              pass the host's NAME into sessions (repeatable); otherwise a
                          confined session gets PATH, HOME, USER, LOGNAME, LANG, LC_*,
                          TERM, TZ, TMPDIR and SHELL, an unconfined one all but secrets
  --state-dir DIR         where lingering sessions wait for their next host (default
                          $XDG_RUNTIME_DIR/dshpty, else /tmp/dshpty-UID; it must be
                          a directory of ours with mode 0700)
  --no-watch              nobody may watch the sessions (no watch socket in the state
                          directory, no web page; docs/watch.md)
  --web ADDR:PORT         serve a read-only web page of the sessions (loopback only; the
                          token it needs is printed on stderr; docs/watch.md)
  --web-allow-remote      let --web listen on an address other than loopback
  --record-dir DIR        record every session as an asciicast v2 file in DIR (a
                          session opened with record false is not; docs/watch.md)
  --record-max-bytes N    a recording's largest size (default 64 MiB): it ends with a
                          marker saying it was cut
)";
}

}  // namespace dshpty::tool
