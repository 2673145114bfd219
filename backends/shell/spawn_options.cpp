#include "spawn_options.hpp"

#include <charconv>

#include "dialect/dialect.hpp"
#include "shell_session.hpp"

namespace dshpty::shell {

namespace {
constexpr unsigned kMaxDimension = 4096;
}  // namespace

Status check_option_names(const std::map<std::string, std::string>& options,
                          std::span<const std::string_view> known, std::string_view backend_words) {
  for (const auto& [name, value] : options) {
    bool found = false;
    for (std::string_view known_name : known) found = found || name == known_name;
    if (found) continue;
    std::string list;
    for (std::string_view known_name : known) list += (list.empty() ? "" : ", ") + std::string(known_name);
    return make_error(Code::INVALID_ARGUMENT, "unknown " + std::string(backend_words) + " option \"" +
                                                  name + "\" (known: " + list + ")");
  }
  return {};
}

Result<unsigned> parse_dimension(const std::map<std::string, std::string>& options,
                                 const char* name, unsigned fallback) {
  auto it = options.find(name);
  unsigned value = fallback;
  if (it != options.end()) {
    const std::string& text = it->second;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return make_error(Code::INVALID_ARGUMENT,
                        std::string("shell option \"") + name + "\" is not a number: " + text);
    }
  }
  if (value < 1 || value > kMaxDimension) {
    return make_error(Code::INVALID_ARGUMENT, std::string("shell ") + name + " must be 1.." +
                                                  std::to_string(kMaxDimension) + ", got " +
                                                  std::to_string(value));
  }
  return value;
}

Result<ShellConfig::Terminal> parse_terminal(const std::map<std::string, std::string>& options,
                                             ShellConfig::Terminal fallback) {
  auto it = options.find("terminal");
  if (it == options.end()) return fallback;
  if (it->second == "dumb") return ShellConfig::Terminal::dumb;
  if (it->second == "xterm") return ShellConfig::Terminal::xterm;
  return make_error(Code::INVALID_ARGUMENT,
                    "shell option \"terminal\" must be dumb or xterm, got \"" + it->second + "\"");
}

const char* term_name(ShellConfig::Terminal terminal) noexcept {
  return terminal == ShellConfig::Terminal::xterm ? "xterm-256color" : "dumb";
}

void plan_integration(StartParams& p, const ShellChoice& choice) {
  p.mark_nonce = make_mark_nonce();
  p.startup_words = choice.rc == ShellConfig::StartupFiles::user ? " (rc: user)" : "";
  p.abandoned_lines = choice.dialect == Dialect::fish;
}

}  // namespace dshpty::shell
