#include "sandbox_support.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

extern char** environ;

namespace dshpty::test {

SpawnRequest in_dir(const std::string& cwd, std::map<std::string, std::string> options) {
  SpawnRequest r;
  r.cwd = cwd;
  r.options = std::move(options);
  return r;
}

Ran run(ShellFixture& fx, BackendSession& s, const std::string& command) {
  auto r = fx.send(s, command);
  REQUIRE_MESSAGE(r, show(r));
  return {r->viewport, r->exit_code.value_or(-1)};
}

ShellConfig patient(ShellConfig config) {
  config.idle_silence = std::chrono::minutes(2);
  return config;
}

std::string sandbox_unavailable() {
  // The backend's own flags on `true`: if this fails, every confined spawn would.
  std::vector<const char*> argv = {"bwrap", "--unshare-user", "--disable-userns", "--unshare-pid",
                                   "--unshare-ipc", "--die-with-parent", "--new-session",
                                   "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                   "--tmpfs", "/tmp", "--unshare-net", "--", "true", nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, "bwrap", &actions, nullptr, const_cast<char**>(argv.data()), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return "bwrap cannot be run here (is bubblewrap installed?)";
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return "bwrap cannot create the namespaces here (user, nested user, pid, ipc or net "
           "namespaces, or /proc, refused)";
  }
  return {};
}

ShellConfig sandbox_config(const ShellFixture& fx, SandboxMode mode) {
  ShellConfig c = fx.config();
  c.sandbox = mode;
  return c;
}

ScratchDir::ScratchDir(const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    const char* dir = std::getenv("DSHPTY_SANDBOX_SCRATCH");
    base = dir && *dir ? dir : std::filesystem::current_path().string();
    // A build tree under /tmp (a CI clone there) is inside what the sandbox hides: the
    // tests need their "outside" to be the host's own, so they use /var/tmp then.
    if (base == "/tmp" || base.rfind("/tmp/", 0) == 0) base = "/var/tmp";
  }
  std::string templ = base + "/dshpty-sandbox-XXXXXX";
  if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp under " + base);
  path_ = templ;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::sub(const std::string& name) const {
  std::string p = path_ + "/" + name;
  ::mkdir(p.c_str(), 0755);
  return p;
}

LoopbackListener::LoopbackListener() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 ||
      ::listen(fd_, 16) < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
    throw std::runtime_error("loopback listener");
  }
  port_ = ntohs(addr.sin_port);
}

LoopbackListener::~LoopbackListener() {
  if (fd_ >= 0) ::close(fd_);
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

std::string left_behind(const std::string& marker) {
  std::string out;
  for (pid_t pid : marked_processes(marker)) {
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "re");
    char line[512] = "";
    if (f) {
      if (!std::fgets(line, sizeof line, f)) line[0] = '\0';
      std::fclose(f);
    }
    out += std::string(line) + "; ";
  }
  return out;
}

}  // namespace dshpty::test

// The suite's main: a machine that cannot confine is reported skipped (exit 77, which
// Meson shows as SKIP) with its reason, never passed.
int main(int argc, char** argv) {
  std::string why = dshpty::test::sandbox_unavailable();
  if (!why.empty()) {
    std::fprintf(stderr, "sandbox suite skipped: %s\n", why.c_str());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
