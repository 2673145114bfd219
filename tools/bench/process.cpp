#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "bash_profile.hpp"
#include "stats.hpp"

extern char** environ;

namespace bench {

namespace {

[[noreturn]] void fail(const std::string& what, int err = errno) {
  throw std::runtime_error(what + ": " + std::strerror(err));
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Keeps the newest bytes only: a prompt check needs a few dozen.
constexpr std::size_t kTailKeep = 256;

}  // namespace

PtyChild::PtyChild(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   unsigned rows, unsigned cols) {
  master_ = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master_ < 0) fail("posix_openpt");
  if (grantpt(master_) != 0 || unlockpt(master_) != 0) fail("unlockpt");
  winsize ws{};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  if (ioctl(master_, TIOCSWINSZ, &ws) != 0) fail("TIOCSWINSZ");
  char name[128];
  if (ptsname_r(master_, name, sizeof name) != 0) fail("ptsname_r");

  // setsid runs before the file actions, so opening the slave without O_NOCTTY makes it the
  // child's controlling terminal, as forkpty() would.
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, name, O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&fa, 0, 1);
  posix_spawn_file_actions_adddup2(&fa, 0, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  auto av = c_strings(argv);
  auto ev = c_strings(env);
  int rc = posix_spawn(&pid_, av[0], &fa, &attr, av.data(), ev.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    pid_ = -1;
    fail("posix_spawn " + argv[0], rc);
  }
}

PtyChild::PtyChild(PtyChild&& o) noexcept : master_(o.master_), pid_(o.pid_) {
  o.master_ = -1;
  o.pid_ = -1;
}

PtyChild& PtyChild::operator=(PtyChild&& o) noexcept {
  if (this != &o) {
    release();
    master_ = o.master_;
    pid_ = o.pid_;
    o.master_ = -1;
    o.pid_ = -1;
  }
  return *this;
}

PtyChild::~PtyChild() { release(); }

void PtyChild::release() noexcept {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    int st;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (master_ >= 0) close(master_);
  master_ = -1;
}

int PtyChild::wait() {
  int st = 0;
  while (waitpid(pid_, &st, 0) < 0) {
    if (errno != EINTR) fail("waitpid");
  }
  pid_ = -1;
  return st;
}

bool PtyChild::read_until_prompt(std::string& tail, std::chrono::milliseconds limit) {
  return read_until(tail, limit, ends_at_prompt);
}

bool PtyChild::read_until(std::string& tail, std::chrono::milliseconds limit,
                          const std::function<bool(std::string_view)>& done) {
  const auto deadline = Clock::now() + limit;
  char buf[4096];
  while (!done(tail)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return false;
    pollfd p{master_, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t n = read(master_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    tail.append(buf, static_cast<std::size_t>(n));
    if (tail.size() > kTailKeep) tail.erase(0, tail.size() - kTailKeep);
  }
  return true;
}

void PtyChild::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(master_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write to master");
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

bool Captured::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

static int spawn_and_wait(const std::vector<std::string>& argv,
                          const std::vector<std::string>& extra_env, std::string* out) {
  int pipefd[2] = {-1, -1};
  if (out && pipe2(pipefd, O_CLOEXEC) != 0) fail("pipe2");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (out)
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  else
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  auto av = c_strings(argv);
  auto ev = c_strings(env);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), ev.data());
  posix_spawn_file_actions_destroy(&fa);
  if (out) close(pipefd[1]);
  if (rc != 0) {
    if (out) close(pipefd[0]);
    fail("posix_spawnp " + argv[0], rc);
  }
  if (out) {
    char buf[65536];
    for (;;) {
      ssize_t n = read(pipefd[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out->append(buf, static_cast<std::size_t>(n));
    }
    close(pipefd[0]);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

Captured run_capture(const std::vector<std::string>& argv,
                     const std::vector<std::string>& extra_env) {
  Captured c;
  c.status = spawn_and_wait(argv, extra_env, &c.out);
  return c;
}

int run_quiet(const std::vector<std::string>& argv) { return spawn_and_wait(argv, {}, nullptr); }

unsigned long raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return static_cast<unsigned long>(rl.rlim_cur);
}

}  // namespace bench
