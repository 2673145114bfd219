#include "session_options.hpp"

#include <charconv>

#include "dshpty/remote.hpp"
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
  if (arg == "--state-dir") {
    auto text = reader.value();
    if (!text) return Status(text.error());
    if (text->empty() || text->front() != '/') return Status(bad("--state-dir needs an absolute path"));
    options.state_dir = std::string(*text);
    return Status();
  }
  if (arg == "--rows" || arg == "--cols") {
    auto n = reader.number(1, 4096);
    if (!n) return Status(n.error());
    (arg == "--rows" ? options.rows : options.cols) = static_cast<unsigned>(*n);
    return Status();
  }
  if (arg == "--idle-ms" || arg == "--timeout-ms") {
    auto n = reader.number(1, 24ull * 3600 * 1000);
    if (!n) return Status(n.error());
    (arg == "--idle-ms" ? options.idle : options.timeout) = std::chrono::milliseconds(*n);
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
    auto n = reader.number(1, 24ull * 3600 * 1000);
    if (!n) return Status(n.error());
    (arg == "--remote-ping-ms" ? options.remote_ping : options.remote_timeout) = std::chrono::milliseconds(*n);
    return Status();
  }
  if (arg == "--max-result-bytes") {
    auto n = reader.number(render::kMinMaxResultBytes, std::uint64_t{1} << 32);
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
  // A link pinged no sooner than it times out would be lost whenever it is idle.
  const auto timeout = options.remote_timeout.value_or(RemoteConfig{}.link_timeout);
  if (options.remote_ping && *options.remote_ping >= timeout)
    return bad("--remote-ping-ms (" + std::to_string(options.remote_ping->count()) +
               ") must be below --remote-timeout-ms (" + std::to_string(timeout.count()) +
               (options.remote_timeout ? ")" : ", the default)"));
  return {};
}

std::vector<std::string> shell_argv(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base == "bash") return {path, "--noprofile", "--norc", "-i"};
  return {path, "-i"};
}

std::string_view session_options_usage() {
  return R"(  --shell PATH            the shell to run (default /bin/bash --noprofile --norc -i;
                          a non-bash shell is run as PATH -i)
  --cwd DIR               the sessions' default working directory (default: ours)
  --rows N, --cols N      the terminal size of new sessions (default 40 x 160)
  --idle-ms MS            silence that ends a send as inferred_idle (default 3000)
  --timeout-ms MS         a send's default deadline (default 30000)
  --max-result-bytes N    cut output longer than N bytes (default 262144, at least 64)
  --remote NAME=COMMAND   register a remote backend of type NAME (repeatable): COMMAND
                          is a transport to a far `dshpty-supervisor --stdio`, split
                          into words as a shell would (quotes, backslashes; no shell
                          is run), e.g. --remote box='ssh -T box dshpty-supervisor
                          --stdio'; then open NAME. --shell, --rows, --cols, --idle-ms
                          and --timeout-ms apply there too (--cwd does not)
  --remote-ping-ms MS     ping an idle link this often (default 10000; with only
                          --remote-timeout-ms, a third of it when that is less)
  --remote-timeout-ms MS  a link silent this long is lost (default 30000)
  --state-dir DIR         where lingering sessions wait for their next host (default
                          $XDG_RUNTIME_DIR/dshpty, else /tmp/dshpty-UID; it must be
                          a directory of ours with mode 0700)
)";
}

}  // namespace dshpty::tool
