// A host that reaps our children behind our back (SIGCHLD ignored, a
// SIGCHLD handler calling waitpid(-1), libev's default loop with the host's own ev_child)
// changes neither exit statuses nor quiescence. Each mode runs in a forked child.
#include <doctest/doctest.h>
#include <ev.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>

#include "child_process.hpp"
#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

enum class Reaping { sig_ign, waitpid_handler, default_loop_ev_child };

int failures = 0;
#define CHILD_CHECK(cond)                                                         \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "child check failed at line %d: %s\n", __LINE__, #cond); \
      ++failures;                                                                 \
    }                                                                             \
  } while (0)

void reap_everything(int) {
  int saved = errno;
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  errno = saved;
}

int host_children_reaped = 0;

int run_mode(Reaping mode, const std::string& marker) {
  struct ev_loop* loop = nullptr;
  ev_child host_child;
  if (mode == Reaping::sig_ign) {
    ::signal(SIGCHLD, SIG_IGN);
    loop = ev_loop_new(EVFLAG_AUTO);
  } else if (mode == Reaping::waitpid_handler) {
    struct sigaction sa {};
    sa.sa_handler = reap_everything;  // no SA_RESTART: our calls also see EINTR
    ::sigaction(SIGCHLD, &sa, nullptr);
    loop = ev_loop_new(EVFLAG_AUTO);
  } else {
    loop = ev_default_loop(0);
    ev_child_init(&host_child, [](struct ev_loop*, ev_child*, int) { ++host_children_reaped; },
                  0, 0);
    ev_child_start(loop, &host_child);
  }

  {
    ShellFixture fx(loop);
    auto config = fx.config();
    config.env["DSHPTY_TEST_MARK"] = marker;
    // 1. exit status survives a stolen helper reap.
    auto s = fx.spawn(config);
    CHILD_CHECK(s.session);
    if (!s.session) return 1;
    fx.type(*s.session, "sleep 300 & exit 3");
    CHILD_CHECK(run_until(loop, [&] { return !s.session->status().running(); }));
    CHILD_CHECK(s.session->status() == SessionStatus::exited_with_code(3));
    Status st = fx.close(*s.session);
    CHILD_CHECK(st.ok());
    if (!st) std::fprintf(stderr, "%s\n", describe(st.error()).c_str());
    CHILD_CHECK(s.shell()->quiescent());
    CHILD_CHECK(marked_processes(marker).empty());

    // 2. close of a running shell with escaped children.
    auto r = fx.spawn(config);
    CHILD_CHECK(r.session);
    if (!r.session) return 1;
    fx.type(*r.session, "setsid sleep 300 & nohup sleep 300 >/dev/null 2>&1 &");
    CHILD_CHECK(run_until(loop, [&] { return marked_processes_named(marker, "sleep").size() >= 2; }));
    st = fx.close(*r.session);
    CHILD_CHECK(st.ok());
    CHILD_CHECK(r.shell()->quiescent());
    CHILD_CHECK(marked_processes(marker).empty());
    CHILD_CHECK(r.session->status().signal.has_value() || r.session->status().exit_code.has_value());
  }
  if (mode == Reaping::default_loop_ev_child) {
    // Who reaps each helper (libev's SIGCHLD watcher or our waitid on its pidfd) is a race
    // in this mode; either way the statuses and quiescence above held. (The other two
    // modes steal every reap deterministically.)
    ev_child_stop(loop, &host_child);
  } else {
    ev_loop_destroy(loop);
  }
  return failures == 0 ? 0 : 1;
}

void check_mode(Reaping mode) {
  std::string marker = fresh_marker("reaping");
  auto child = fork_child([&](int) { return run_mode(mode, marker); });
  REQUIRE(child.pid > 0);
  int rc = wait_child(child, 60s);
  close_child(child);
  CHECK(rc == 0);
  kill_marked(marker);  // a failing child must not leak its sessions
  CHECK(marked_processes(marker).empty());
}

}  // namespace

TEST_CASE("SIGCHLD ignored by the host") { check_mode(Reaping::sig_ign); }
TEST_CASE("a host SIGCHLD handler calling waitpid(-1)") { check_mode(Reaping::waitpid_handler); }
TEST_CASE("libev's default loop with the host's own ev_child watcher") {
  check_mode(Reaping::default_loop_ev_child);
}
