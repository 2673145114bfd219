#include "supervisor/integration.hpp"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <string_view>

#include "dialect/dialect.hpp"
#include "integration_scripts.hpp"
#include "proc/write_all.hpp"

namespace dshpty::supervisor {

namespace {

std::string zsh_dir;     // the directory made for zsh, until removed
std::string python_dir;  // the directory holding the PYTHONSTARTUP file, until removed
int script_fd = -1;   // the memfd made for bash or fish, until the shell read it
int nonce_fd = -1;    // the nonce's pipe, until the shell read it

// A sealed memfd holding `script`, named for the shell to read: /proc/<self>/fd/<n>.
bool script_path(std::string_view script, std::string& path) {
  int fd = ::memfd_create("dshpty-integration", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return false;
  if (int err = proc::write_all(fd, script); err != 0) {
    ::close(fd);
    errno = err;
    return false;
  }
  ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  script_fd = fd;
  path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd);
  return true;
}

bool write_file(const std::string& path, std::string_view text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  const int err = proc::write_all(fd, text);
  ::close(fd);
  if (err != 0) errno = err;
  return err == 0;
}

bool zsh_directory(std::string& path) {
  const char* tmp = ::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/dshpty-zsh.XXXXXX";
  if (!::mkdtemp(pattern.data())) return false;  // 0700
  zsh_dir = pattern;
  if (!write_file(pattern + "/.zshenv", integration::kZshEnv) ||
      !write_file(pattern + "/.zshrc", integration::kZshRc)) {
    const int saved = errno;
    remove_integration();
    errno = saved;
    return false;
  }
  path = pattern;
  return true;
}

// A Python bytes literal naming `text` byte by byte: no path can close the literal.
std::string python_bytes(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "b\"";
  for (unsigned char c : text) {
    out += "\\x";
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out + "\"";
}

// History private or off: Python's interactive hook would read and write ~/.python_history.
// PYTHONSTARTUP runs before that hook and replaces it (dialect/integration/python_startup.py);
// the file must outlive the shell's start (python starts whenever), so it is a file in a
// fresh 0700 directory this helper removes at its exit, not the sealed memfd of bash's script
// (this helper stops being dumpable once the shell opened that, and /proc/<helper>/fd/N
// closes to everyone else). The user's own PYTHONSTARTUP runs from it, after. Best effort:
// where no directory can be made (a read-only sandbox's $TMPDIR) the session starts without
// it, as it would have before.
void python_startup() {
  const char* history = ::getenv("DSHPTY_HISTORY");
  if (!history || (std::strcmp(history, "private") != 0 && std::strcmp(history, "off") != 0)) return;
  const char* tmp = ::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/dshpty-python.XXXXXX";
  if (!::mkdtemp(dir.data())) return;  // 0700
  python_dir = dir;
  const char* user = ::getenv("PYTHONSTARTUP");
  std::string script(integration::kPythonStartup);
  const std::string_view placeholder = "@DSHPTY_USER_STARTUP@";
  const auto at = script.find(placeholder);
  if (at != std::string::npos) {
    script.replace(at, placeholder.size(), user && *user ? python_bytes(user) : "None");
  }
  const std::string path = dir + "/startup.py";
  if (!write_file(path, script)) {
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
    python_dir.clear();
    return;
  }
  ::setenv("PYTHONSTARTUP", path.c_str(), 1);
}

// The nonce leaves the environment: a process's /proc/PID/environ shows the environment it
// was started with (the bytes where exec put them, whatever unset did since), and any program
// in the session can read its shell's and this helper's. So the value is overwritten where
// exec put it, taken out of what the shell inherits, and handed to the shell through a pipe
// instead: the integration reads it once from /proc/<helper>/fd/N (DSHPTY_NONCE_FROM), and
// after that the pipe is empty, its write end closed: a later reader gets end of file.
std::string take_nonce() {
  char* value = ::getenv("DSHPTY_NONCE");
  std::string nonce = value ? value : "";
  if (value) std::memset(value, 0, nonce.size());
  ::unsetenv("DSHPTY_NONCE");
  return nonce;
}

bool nonce_pipe(const std::string& nonce) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  // Far less than a pipe's buffer: the write completes without a reader.
  const int err = proc::write_all(fds[1], nonce + "\n");
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    errno = err;
    return false;
  }
  nonce_fd = fds[0];
  const std::string path = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fds[0]);
  ::setenv("DSHPTY_NONCE_FROM", path.c_str(), 1);
  return true;  // fds[0] stays open (close-on-exec) for the shell to open by its path
}

void replace_placeholder(char** argv, const std::string& path) {
  const std::string_view placeholder = shell::kInitPlaceholder;
  for (char** arg = argv; *arg; ++arg) {
    std::string value(*arg);
    const auto at = value.find(placeholder);
    if (at == std::string::npos) continue;
    value.replace(at, placeholder.size(), path);
    *arg = ::strdup(value.c_str());  // lives until the exec
  }
}

}  // namespace

bool install_integration(char** argv) {
  if (!::getenv("DSHPTY_NONCE")) return true;
  const std::string nonce = take_nonce();
  if (!argv[0]) return true;
  std::string_view name = argv[0];
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (name != "bash" && name != "fish" && name != "zsh") return true;
  if (!nonce_pipe(nonce)) return false;
  python_startup();
  std::string path;
  if (name == "bash") {
    if (!script_path(integration::kBash, path)) return false;
  } else if (name == "fish") {
    if (!script_path(integration::kFish, path)) return false;
  } else if (name == "zsh") {
    if (!zsh_directory(path)) return false;
    const char* user = ::getenv("ZDOTDIR");
    ::setenv("DSHPTY_USER_ZDOTDIR", user ? user : "", 1);
    ::setenv("DSHPTY_ZSH_DIR", path.c_str(), 1);
    ::setenv("ZDOTDIR", path.c_str(), 1);
    return true;
  }
  replace_placeholder(argv, path);
  return true;
}

int integration_nonce_fd() { return nonce_fd; }

void close_integration_fds() {
  if (script_fd >= 0) ::close(script_fd);
  if (nonce_fd >= 0) ::close(nonce_fd);
  script_fd = nonce_fd = -1;
}

void remove_integration() {
  if (!python_dir.empty()) {
    ::unlink((python_dir + "/startup.py").c_str());
    ::rmdir(python_dir.c_str());
    python_dir.clear();
  }
  if (zsh_dir.empty()) return;
  ::unlink((zsh_dir + "/.zshenv").c_str());
  ::unlink((zsh_dir + "/.zshrc").c_str());
  ::rmdir(zsh_dir.c_str());
  zsh_dir.clear();
}

}  // namespace dshpty::supervisor
