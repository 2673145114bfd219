#include "dialect/dialect.hpp"

#include <sys/random.h>

#include <random>

namespace dshpty::shell {

namespace {

constexpr std::string_view kPrivateViminit =
    "if filereadable(expand('~/.vimrc')) | execute 'source' fnameescape(expand('~/.vimrc'))"
    " | elseif filereadable(expand('~/.vim/vimrc')) | execute 'source' fnameescape(expand('~/.vim/vimrc'))"
    " | elseif filereadable($VIMRUNTIME . '/defaults.vim') | source $VIMRUNTIME/defaults.vim"
    " | endif | if exists('+viminfofile') | set viminfofile=NONE | else | set viminfo= | endif";

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Result<Dialect> dialect_of(const std::string& name) {
  if (name == "bash") return Dialect::bash;
  if (name == "zsh") return Dialect::zsh;
  if (name == "fish") return Dialect::fish;
  return make_error(Code::INVALID_ARGUMENT, "");
}

}  // namespace

std::string_view dialect_name(Dialect dialect) noexcept {
  switch (dialect) {
    case Dialect::bash: return "bash";
    case Dialect::zsh: return "zsh";
    case Dialect::fish: return "fish";
  }
  return "bash";
}

Result<ShellChoice> parse_shell_choice(const std::map<std::string, std::string>& options,
                                       const ShellConfig& config) {
  ShellChoice choice;
  auto option = [&](const char* name, const std::string& fallback) {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  };
  const std::string shell = option("shell", config.shell);
  // A bare dialect name is that shell from PATH; a path names its dialect by its name.
  const bool is_path = shell.find('/') != std::string::npos;
  auto dialect = dialect_of(is_path ? base_name(shell) : shell);
  if (!dialect || (is_path && shell.front() != '/')) {
    return make_error(Code::INVALID_ARGUMENT,
                      "shell option \"shell\" must be bash, zsh, fish or an absolute path to one "
                      "of them, got \"" + shell + "\"");
  }
  choice.dialect = *dialect;
  choice.path = shell;

  const std::string rc = option("rc", config.rc == ShellConfig::StartupFiles::user ? "user" : "none");
  if (rc == "none") {
    choice.rc = ShellConfig::StartupFiles::none;
  } else if (rc == "user") {
    choice.rc = ShellConfig::StartupFiles::user;
  } else {
    return make_error(Code::INVALID_ARGUMENT, "shell option \"rc\" must be none or user, got \"" + rc + "\"");
  }

  choice.history = option("history", config.history);
  if (choice.history != "private" && choice.history != "off" &&
      (choice.history.empty() || choice.history.front() != '/')) {
    return make_error(Code::INVALID_ARGUMENT,
                      "shell option \"history\" must be private, off or an absolute file path, got \"" +
                          choice.history + "\"");
  }
  if (choice.dialect == Dialect::fish && choice.history.front() == '/') {
    return make_error(Code::INVALID_ARGUMENT,
                      "shell option \"history\": fish keeps history by session name, not in a "
                      "file of your choice: use private or off");
  }
  return choice;
}

std::vector<std::string> dialect_argv(const ShellChoice& choice) {
  const std::string init(kInitPlaceholder);
  switch (choice.dialect) {
    case Dialect::bash:
      // --rcfile replaces ~/.bashrc: the integration reads the user's files itself (rc user).
      return {choice.path, "--noprofile", "--rcfile", init, "-i"};
    case Dialect::zsh:
      // ZDOTDIR (set by the helper) points at the integration's .zshenv and .zshrc.
      return {choice.path, "-i"};
    case Dialect::fish: {
      std::vector<std::string> argv{choice.path};
      if (choice.rc == ShellConfig::StartupFiles::none) argv.push_back("--no-config");
      // private mode: no history file is read or written (history private and off).
      argv.push_back("--private");
      argv.push_back("--init-command");
      argv.push_back("source " + init);
      argv.push_back("-i");
      return argv;
    }
  }
  return {};
}

std::vector<std::string> dialect_env(const ShellChoice& choice, std::string_view nonce) {
  std::vector<std::string> env{
      "DSHPTY_NONCE=" + std::string(nonce),
      std::string("DSHPTY_RC=") + (choice.rc == ShellConfig::StartupFiles::user ? "user" : "none"),
      "DSHPTY_HISTORY=" + choice.history,
  };
  // History private or off holds for the programs a session runs too: each one's own
  // switch, so nothing they read at their prompts reaches the user's home. Python before
  // 3.13 has none: the helper gives it a PYTHONSTARTUP (supervisor/integration.cpp). vim
  // reads VIMINIT instead of a vimrc, so this one sources the vimrc vim would have read
  // (or defaults.vim without one) before turning viminfo off.
  if (choice.history == "private" || choice.history == "off") {
    env.insert(env.end(), {
        "PYTHON_HISTORY=/dev/null",
        "NODE_REPL_HISTORY=",
        "SQLITE_HISTORY=/dev/null",
        "LESSHISTFILE=-",
        std::string("VIMINIT=") + std::string(kPrivateViminit),
    });
  }
  // zsh: the helper saves the user's ZDOTDIR (its own side's, for a far shell) and points
  // ZDOTDIR at the integration (supervisor/integration.cpp).
  return env;
}

std::string make_mark_nonce() {
  unsigned char bytes[8];
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    // Too early in boot for the pool: a forged mark is an accident, not an attack here.
    std::random_device device;
    for (auto& b : bytes) b = static_cast<unsigned char>(device());
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

}  // namespace dshpty::shell
