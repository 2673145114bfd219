// dshpty-repl: one program driving a real dshpty::Service with the shell backend in one
// libev loop, through one engine; text for people, --json for programs (see --help and
// docs/tool-protocol.md).
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <ev.h>

#include "dshpty/service.hpp"
#include "dshpty/shell.hpp"
#include "engine.hpp"
#include "modes.hpp"
#include "options.hpp"
#include "output_writer.hpp"

namespace {

using namespace dshpty;
using namespace dshpty::repl;

// $DSHPTY_SUPERVISOR, else the helper of the build tree this program sits in, else ""
// (the backend's installed path).
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

ShellConfig shell_config(const Options& options) {
  ShellConfig config;
  if (options.shell) config.argv = shell_argv(*options.shell);
  if (options.cwd) config.cwd = *options.cwd;
  if (options.rows) config.rows = *options.rows;
  if (options.cols) config.cols = *options.cols;
  config.supervisor_path = find_supervisor();
  return config;
}

// Writing to a reader that went away must fail with EPIPE, not kill us before the sessions
// are torn down. A no-op handler (not SIG_IGN) so the shells we start get the default back.
void on_sigpipe(int) {}

// Restores stdin/stdout's file status flags at exit: O_NONBLOCK lives on the open file,
// shared with whoever started us.
struct FlagsGuard {
  int fd;
  int flags;
  explicit FlagsGuard(int f) : fd(f), flags(fcntl(f, F_GETFL)) {}
  void set_nonblocking() const {
    if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  }
  ~FlagsGuard() {
    if (flags >= 0) fcntl(fd, F_SETFL, flags);
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  auto parsed = parse_options(args);
  if (!parsed) {
    std::fprintf(stderr, "dshpty-repl: %s\nTry 'dshpty-repl --help'.\n", parsed.error()->message.c_str());
    return 2;
  }
  const Options& options = parsed.value();
  if (options.help) {
    std::fputs(usage_text().c_str(), stdout);
    return 0;
  }
  if (options.version) {
    std::fputs(version_text().c_str(), stdout);
    return 0;
  }

  struct sigaction pipe_action {};
  pipe_action.sa_handler = &on_sigpipe;
  sigemptyset(&pipe_action.sa_mask);
  sigaction(SIGPIPE, &pipe_action, nullptr);

  // Our own loop, not libev's default one: that one would reap every child with
  // waitpid(-1), the sessions' helpers included.
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  if (!loop) {
    std::fputs("dshpty-repl: cannot create an event loop\n", stderr);
    return 1;
  }
  int exit_code = 0;
  {
    FlagsGuard in_flags(STDIN_FILENO), out_flags(STDOUT_FILENO);
    // A terminal's stdin and stdout are one open file (libedit writes it with stdio), so
    // only pipes and files are made non-blocking; a terminal is read only when ready.
    if (options.json || !isatty(STDIN_FILENO)) in_flags.set_nonblocking();
    if (options.json) out_flags.set_nonblocking();

    Service service(loop);
    auto registration = service.register_backend(make_shell_backend(loop, shell_config(options)));
    if (!registration) {
      std::fprintf(stderr, "dshpty-repl: %s\n", describe(registration.error()).c_str());
      exit_code = 1;
    } else {
      // --idle-ms and --timeout-ms are the engine's defaults for a send, whatever its backend.
      engine::Engine engine(service, {.max_result_bytes = options.max_result_bytes,
                                      .send_idle = options.idle,
                                      .send_timeout = options.timeout});
      OutputWriter out(loop, STDOUT_FILENO);
      exit_code = options.json ? run_json_mode(loop, engine, out) : run_text_mode(loop, engine, out, options);
    }
  }
  ev_loop_destroy(loop);
  return exit_code;
}
