#include "host_setup.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "dshpty/linger.hpp"

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

namespace {
// Checked by check_session_options at start-up.
void apply_shell_options(const SessionOptions& options, ShellConfig& config) {
  if (options.shell) config.shell = *options.shell;
  if (options.rc) config.rc = *options.rc == "user" ? ShellConfig::StartupFiles::user : ShellConfig::StartupFiles::none;
  if (options.history) config.history = *options.history;
}

SandboxMode mode_named(const std::string& name) {
  if (name == "read-only") return SandboxMode::read_only;
  if (name == "workspace-write") return SandboxMode::workspace_write;
  return SandboxMode::none;
}

// The operator's policy (checked at start-up): --sandbox is the default and the floor,
// --network off the default and the floor; the workspaces are --workspace, else the one
// directory the sessions start in by default (--cwd, else ours); --limit-* the default and
// the ceiling of each limit.
void apply_policy(const SessionOptions& options, ShellConfig& config) {
  if (options.sandbox) config.sandbox = config.sandbox_floor = mode_named(*options.sandbox);
  if (options.network) {
    config.sandbox_network = *options.network;
    config.network_floor = !*options.network;
  }
  // Each --limit-* is the default and the ceiling: a session may lower it, never raise it.
  config.limits = config.limit_ceilings = options.limits;
  config.workspaces = options.workspaces;
  if (config.workspaces.empty()) {
    char here[PATH_MAX];
    if (options.cwd) {
      config.workspaces.push_back(*options.cwd);
    } else if (getcwd(here, sizeof here)) {
      config.workspaces.emplace_back(here);
    }
  }
  config.writable_roots = options.writable_roots;
  config.env_pass = options.env_pass;
}
}  // namespace

ShellConfig shell_config(const SessionOptions& options) {
  ShellConfig config;
  apply_shell_options(options, config);
  if (options.cwd) config.cwd = *options.cwd;
  if (options.rows) config.rows = *options.rows;
  if (options.cols) config.cols = *options.cols;
  if (options.idle) config.idle_silence = *options.idle;
  if (options.timeout) config.send_timeout = *options.timeout;
  config.allow_sockets = options.allow_sockets;
  config.protected_paths = options.protected_paths;
  apply_policy(options, config);
  config.supervisor_path = find_supervisor();
  if (options.state_dir) config.state_dir = *options.state_dir;
  config.watchable = options.watch;
  if (options.record_dir) config.record_dir = *options.record_dir;
  if (options.record_max_bytes) config.record_max_bytes = *options.record_max_bytes;
  return config;
}

RemoteConfig remote_config(const SessionOptions& options, const RemoteOption& remote) {
  RemoteConfig config;
  config.type = remote.name;
  config.transport = remote.transport;
  apply_shell_options(options, config.shell);
  if (options.rows) config.shell.rows = *options.rows;
  if (options.cols) config.shell.cols = *options.cols;
  if (options.idle) config.shell.idle_silence = *options.idle;
  if (options.timeout) config.shell.send_timeout = *options.timeout;
  // Where this host keeps its lingering remote sessions' records (docs/outlive.md).
  if (options.state_dir) config.shell.state_dir = *options.state_dir;
  config.shell.watchable = options.watch;
  if (options.record_dir) config.shell.record_dir = *options.record_dir;
  if (options.record_max_bytes) config.shell.record_max_bytes = *options.record_max_bytes;
  // --limit-* hold for remote sessions too: this host's policy, applied on the far machine.
  config.shell.limits = config.shell.limit_ceilings = options.limits;
  if (options.remote_timeout) {
    config.link_timeout = *options.remote_timeout;
    if (!options.remote_ping)
      config.ping_interval = std::max(std::chrono::milliseconds(1),
                                      std::min(config.ping_interval, *options.remote_timeout / 3));
  }
  if (options.remote_ping) config.ping_interval = *options.remote_ping;
  return config;
}

Status register_backends(Service& service, struct ev_loop* loop, ShellConfig local, const SessionOptions& options,
                         std::vector<std::shared_ptr<Backend>>* lingering) {
  const auto on_raw_output = local.on_raw_output;
  auto backend = make_shell_backend(loop, std::move(local));
  if (lingering) lingering->push_back(backend);
  auto shell = service.register_backend(std::move(backend));
  if (!shell) return shell.error();
  for (const auto& remote : options.remotes) {
    RemoteConfig config = remote_config(options, remote);
    config.shell.on_raw_output = on_raw_output;
    auto remote_backend = make_remote_backend(loop, std::move(config));
    if (lingering) lingering->push_back(remote_backend);
    auto registration = service.register_backend(std::move(remote_backend));
    if (!registration)
      return make_error(registration.error()->code,
                        "--remote " + remote.name + ": " + registration.error()->message);
  }
  return {};
}

engine::Settings engine_settings(const SessionOptions& options, std::vector<std::shared_ptr<Backend>> lingering) {
  engine::Settings settings{
      .max_result_bytes = options.max_result_bytes, .send_idle = options.idle, .send_timeout = options.timeout};
  settings.state_dir = options.state_dir.value_or("");
  if (options.sandbox) {
    settings.policy.sandbox_default = *options.sandbox;
    const std::vector<std::string> ordered = {"none", "workspace-write", "read-only"};  // least confined first
    settings.policy.sandbox_allowed.assign(std::find(ordered.begin(), ordered.end(), *options.sandbox), ordered.end());
  }
  settings.policy.network_off = options.network == false;
  if (!lingering.empty()) {
    settings.detach_lingering = [lingering = std::move(lingering)] {
      for (const auto& backend : lingering) (void)detach_lingering_on_close(*backend);
    };
  }
  return settings;
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

unsigned long raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);  // failing leaves the soft limit as it was: reported below
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return static_cast<unsigned long>(rl.rlim_cur);
}

FlagsGuard::FlagsGuard(int fd) : fd_(fd), flags_(fcntl(fd, F_GETFL)) {}

FlagsGuard::~FlagsGuard() {
  if (flags_ >= 0) fcntl(fd_, F_SETFL, flags_);
}

void FlagsGuard::set_nonblocking() const {
  if (flags_ >= 0) fcntl(fd_, F_SETFL, flags_ | O_NONBLOCK);
}

}  // namespace dshpty::tool
