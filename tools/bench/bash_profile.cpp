#include "bash_profile.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "integration_scripts.hpp"

namespace bench {

std::vector<std::string> bash_argv() { return {"/bin/bash", "--noprofile", "--norc", "-i"}; }

std::string prompt_command(std::string_view extra) {
  std::string pc = "printf '\\033]133;D;%s\\007' \"$?\"";
  if (!extra.empty()) {
    pc += "; ";
    pc += extra;
  }
  return pc;
}

static std::string from_env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return std::string(name) + "=" + (v ? v : fallback);
}

std::vector<std::string> bash_env(std::string_view prompt_extra) {
  return {from_env("PATH", "/usr/local/bin:/usr/bin:/bin"),
          from_env("HOME", "/"),
          "TERM=dumb",
          "HISTFILE=",
          "PS1=" + std::string(kPs1),
          "PROMPT_COMMAND=" + prompt_command(prompt_extra)};
}

bool ends_at_prompt(std::string_view tail) {
  if (tail.size() < kPs1.size() + 1 || !tail.ends_with(kPs1)) return false;
  std::string_view head = tail.substr(0, tail.size() - kPs1.size());
  if (!head.ends_with('\x07')) return false;
  head.remove_suffix(1);
  // The exit status between the marker and BEL is digits only.
  while (!head.empty() && head.back() >= '0' && head.back() <= '9') head.remove_suffix(1);
  return head.ends_with(kMarker);
}

namespace {
constexpr std::string_view kMarkNonce = "0123456789abcdef";
constexpr std::string_view kMarkEnd = "\x1b]133;B;dshpty=0123456789abcdef\x07";
}  // namespace

MarkedBash::MarkedBash() {
  std::string templ = (std::filesystem::temp_directory_path() / "dshpty-bench-marks-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  std::ofstream(dir_ + "/rc.bash") << dshpty::integration::kBash;
  // The integration reads its nonce from a file the helper names (DSHPTY_NONCE_FROM), never
  // from its environment: the bare loop hands it one the same way.
  std::ofstream(dir_ + "/nonce") << kMarkNonce << '\n';
}

MarkedBash::~MarkedBash() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::vector<std::string> MarkedBash::argv() const {
  return {"/bin/bash", "--noprofile", "--rcfile", dir_ + "/rc.bash", "-i"};
}

std::vector<std::string> MarkedBash::env() const {
  return {from_env("PATH", "/usr/local/bin:/usr/bin:/bin"), from_env("HOME", "/"), "TERM=dumb",
          "HISTFILE=", "DSHPTY_NONCE_FROM=" + dir_ + "/nonce", "DSHPTY_RC=none",
          "DSHPTY_HISTORY=private"};
}

bool MarkedBash::at_prompt(std::string_view tail) {
  const std::size_t at = tail.rfind(kMarkEnd);
  if (at == std::string_view::npos) return false;
  return tail.find_first_not_of(" \b", at + kMarkEnd.size()) == std::string_view::npos;
}

std::string flood_command(unsigned long long bytes) {
  // 70 characters a line, plain ASCII: what a build log or `cat` of a big file looks like.
  // DSHPTY_BENCH_FLOOD=yes or seq measures the same figure on `yes` (2-byte lines) or `seq`
  // output instead: the screen emulator's worst and its most common flood.
  const char* kind = std::getenv("DSHPTY_BENCH_FLOOD");
  std::string source = "yes 'the quick brown fox jumps over the lazy dog 0123456789 abcdefghijkl'";
  if (kind && std::string_view(kind) == "yes") source = "yes";
  if (kind && std::string_view(kind) == "seq") source = "seq 1 100000000";
  return source + " | head -c " + std::to_string(bytes);
}

}  // namespace bench
