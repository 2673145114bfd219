#include "session_options.hpp"

#include <charconv>

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
  if (arg == "--max-result-bytes") {
    auto n = reader.number(render::kMinMaxResultBytes, std::uint64_t{1} << 32);
    if (!n) return Status(n.error());
    options.max_result_bytes = static_cast<std::size_t>(*n);
    return Status();
  }
  return std::nullopt;
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
)";
}

}  // namespace dshpty::tool
