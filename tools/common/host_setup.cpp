#include "host_setup.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

namespace dshpty::tool {

std::string find_supervisor() {
  if (const char* env = std::getenv("DSHPTY_SUPERVISOR"); env && *env) return env;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  std::string dir(self, static_cast<std::size_t>(n));
  dir.erase(dir.rfind('/'));
  const std::string candidate = dir + "/../backends/shell/dshpty-supervisor";
  return access(candidate.c_str(), X_OK) == 0 ? candidate : std::string();
}

ShellConfig shell_config(const SessionOptions& options) {
  ShellConfig config;
  if (options.shell) config.argv = shell_argv(*options.shell);
  if (options.cwd) config.cwd = *options.cwd;
  if (options.rows) config.rows = *options.rows;
  if (options.cols) config.cols = *options.cols;
  config.supervisor_path = find_supervisor();
  return config;
}

engine::Settings engine_settings(const SessionOptions& options) {
  return {.max_result_bytes = options.max_result_bytes, .send_idle = options.idle, .send_timeout = options.timeout};
}

namespace {
void on_sigpipe(int) {}
}  // namespace

void make_sigpipe_harmless() {
  struct sigaction action {};
  action.sa_handler = &on_sigpipe;
  sigemptyset(&action.sa_mask);
  sigaction(SIGPIPE, &action, nullptr);
}

FlagsGuard::FlagsGuard(int fd) : fd_(fd), flags_(fcntl(fd, F_GETFL)) {}

FlagsGuard::~FlagsGuard() {
  if (flags_ >= 0) fcntl(fd_, F_SETFL, flags_);
}

void FlagsGuard::set_nonblocking() const {
  if (flags_ >= 0) fcntl(fd_, F_SETFL, flags_ | O_NONBLOCK);
}

}  // namespace dshpty::tool
