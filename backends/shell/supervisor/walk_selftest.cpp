// Self-test of ProcessTree (descendants.hpp), over both child sources (the children
// files and the full /proc scan). It is a subreaper itself, so whatever a failing case
// leaves behind comes back to it and is killed before it exits.
//
// Each case runs in a forked "walker" (the root, a subreaper like the helper) that builds
// a tree, walks it and reports over a pipe; a bystander process outside the walker's tree
// must survive every case.
//
// Registered as `shell-supervisor-walk` in the shell suite (backends/shell/meson.build).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "descendants.hpp"

using dshpty::supervisor::ChildSource;
using dshpty::supervisor::ProcessTree;

namespace {

int g_failures = 0;
int g_ready_fd = -1;  // in the walker's tree: each node writes one byte when it is in place
int g_ready_read_fd = -1;  // the walker reads them here

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (!(cond)) {                                              \
      ++g_failures;                                             \
      std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                        \
      std::fprintf(stderr, "\n");                               \
    }                                                           \
  } while (0)

void ready() {
  char c = 1;
  while (::write(g_ready_fd, &c, 1) < 0 && errno == EINTR) {
  }
}

[[noreturn]] void park() {
  for (;;) ::pause();
}

template <class F>
pid_t spawn(F&& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    body();
    park();
  }
  return pid;
}

void flat(int n) {
  for (int i = 0; i < n; ++i) spawn([] { ready(); });
}

void chain(int depth) {
  if (depth == 0) return;
  spawn([depth] {
    chain(depth - 1);
    ready();
  });
}

// fork, setsid, fork, the middle one exits: the daemon reparents to the subreaper.
void daemons(int n, pid_t root) {
  for (int i = 0; i < n; ++i) {
    spawn([root] {
      ::setsid();
      if (::fork() == 0) {
        while (::getppid() != root) sched_yield();
        ready();
        park();
      }
      _exit(0);
    });
  }
}

// Children hang off the thread that forked them: only its task's children file has them.
void threaded_forker(int threads, int children_each) {
  spawn([=] {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([=] {
        for (int c = 0; c < children_each; ++c) {
          if (::fork() == 0) {
            ready();
            park();
          }
        }
        park();
      });
    }
    ready();
    park();
  });
}

void read_ready(int fd, int n) {
  char buf[256];
  while (n > 0) {
    ssize_t got = ::read(fd, buf, n < 256 ? static_cast<std::size_t>(n) : 256);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    n -= static_cast<int>(got);
  }
}

int open_fds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (d && ::readdir(d)) ++n;
  if (d) ::closedir(d);
  return n;
}

// SIGKILL rounds until waitpid says ECHILD, like the helper after its grace. The count of
// rounds it took, or -1 when a bound was hit.
int kill_until_echild(ProcessTree& tree) {
  for (int rounds = 1; rounds < 100000; ++rounds) {
    tree.signal_all({SIGKILL});
    for (;;) {
      pid_t pid = ::waitpid(-1, nullptr, WNOHANG);
      if (pid > 0) continue;
      if (pid < 0 && errno == EINTR) continue;
      if (pid < 0 && errno == ECHILD) return rounds;
      break;
    }
  }
  return -1;
}

struct Report {
  long expected;
  long signalled;
  long zombies;
  long rounds;
  long fds_before;
  long fds_after;
};

// In the walker: a static tree is signalled completely by one walk.
Report static_tree(ChildSource source) {
  pid_t self = ::getpid();
  ProcessTree tree(self, source);
  int fds_before = open_fds();
  int expected = 0;
  flat(10);
  expected += 10;
  chain(300);
  expected += 300;
  daemons(5, self);
  expected += 5;
  threaded_forker(3, 2);
  expected += 1 + 6;
  spawn([] {  // a wide parent, like bash with 600 jobs
    flat(600);
    ready();
  });
  expected += 601;
  read_ready(g_ready_read_fd, expected);
  // TERM kills them all (nothing traps it); no process may be missed by the one walk.
  auto round = tree.signal_all({SIGTERM});
  Report r{expected, static_cast<long>(round.signalled), static_cast<long>(round.zombies), 0,
           fds_before, 0};
  r.rounds = kill_until_echild(tree);
  r.fds_after = open_fds();
  return r;
}

// In the walker: a tree that keeps forking (and ignores TERM) still ends, by SIGKILL rounds.
Report storm(ChildSource source) {
  ProcessTree tree(::getpid(), source);
  int fds_before = open_fds();
  for (int i = 0; i < 4; ++i) {
    spawn([] {
      ::signal(SIGTERM, SIG_IGN);
      ready();
      for (;;) {
        if (::fork() == 0) park();
      }
    });
  }
  read_ready(g_ready_read_fd, 4);
  tree.signal_all({SIGHUP, SIGTERM, SIGCONT});
  Report r{0, 0, 0, 0, fds_before, 0};
  r.rounds = kill_until_echild(tree);
  r.fds_after = open_fds();
  return r;
}

// The live processes whose parent is `pid`, from a full /proc scan (independent of the
// code under test's children files).
std::vector<pid_t> children_by_scan(pid_t pid) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    char* end = nullptr;
    long p = std::strtol(e->d_name, &end, 10);
    if (p <= 0 || *end) continue;
    char path[64], buf[512];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", p);
    FILE* f = std::fopen(path, "re");
    if (!f) continue;
    std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    char* rp = std::strrchr(buf, ')');
    if (!rp) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == pid)
      out.push_back(static_cast<pid_t>(p));
  }
  if (d) ::closedir(d);
  return out;
}

// Kills and reaps whatever a failed case left below us (we are a subreaper), except keep.
void clean_up(pid_t keep) {
  for (int round = 0; round < 1000; ++round) {
    std::vector<pid_t> left = children_by_scan(::getpid());
    bool any = false;
    for (pid_t p : left) {
      if (p == keep) continue;
      any = true;
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
    if (!any) return;
  }
}

void run_case(const char* name, Report (*body)(ChildSource), ChildSource source,
              pid_t bystander) {
  int report_fds[2];
  if (::pipe2(report_fds, O_CLOEXEC) < 0) std::abort();
  pid_t walker = ::fork();
  if (walker == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    ::alarm(120);  // a hung case dies; the top level then cleans up what it left
    ::close(report_fds[0]);
    int ready_fds[2];
    if (::pipe2(ready_fds, O_CLOEXEC) < 0) _exit(3);
    g_ready_read_fd = ready_fds[0];
    g_ready_fd = ready_fds[1];
    Report r = body(source);
    ssize_t ignored = ::write(report_fds[1], &r, sizeof r);
    (void)ignored;
    _exit(0);
  }
  ::close(report_fds[1]);
  Report r{};
  ssize_t n = ::read(report_fds[0], &r, sizeof r);
  ::close(report_fds[0]);
  int status = 0;
  ::waitpid(walker, &status, 0);
  const char* src = source == ChildSource::full_scan ? "full scan" : "children files";
  CHECK(n == static_cast<ssize_t>(sizeof r), "%s (%s): the walker reported nothing (status %d)",
        name, src, status);
  if (n == static_cast<ssize_t>(sizeof r)) {
    if (r.expected > 0)
      CHECK(r.signalled == r.expected, "%s (%s): one walk signalled %ld of %ld", name, src,
            r.signalled, r.expected);
    CHECK(r.rounds > 0, "%s (%s): the kill did not reach ECHILD", name, src);
    CHECK(r.fds_after == r.fds_before, "%s (%s): fds %ld before, %ld after", name, src,
          r.fds_before, r.fds_after);
    std::printf("ok   %-28s %-15s signalled %ld/%ld in one walk, ECHILD after %ld SIGKILL rounds\n",
                name, src, r.signalled, r.expected, r.rounds);
  }
  std::vector<pid_t> left = children_by_scan(::getpid());
  std::size_t others = 0;
  for (pid_t p : left) others += p != bystander;
  CHECK(others == 0, "%s (%s): %zu processes survived the walker", name, src, others);
  CHECK(::kill(bystander, 0) == 0 && ::waitpid(bystander, nullptr, WNOHANG) == 0,
        "%s (%s): the bystander outside the tree was hit", name, src);
  clean_up(bystander);
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t bystander = spawn([] {});
  for (ChildSource source : {ChildSource::automatic, ChildSource::full_scan}) {
    run_case("static tree, one TERM walk", static_tree, source, bystander);
    run_case("fork storm ignoring TERM", storm, source, bystander);
  }
  ::kill(bystander, SIGKILL);
  ::waitpid(bystander, nullptr, 0);
  clean_up(-1);
  std::printf(g_failures ? "FAILED: %d checks\n" : "all passed\n", g_failures);
  return g_failures ? 1 : 0;
}
