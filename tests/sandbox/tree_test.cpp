// Every escape of the shell suite, inside a sandbox: gone when close completes. And a host
// SIGKILLed with confined sessions open leaves nothing of them (the helpers see EOF, and
// bwrap's --die-with-parent takes each namespace down with its init).
#include <doctest/doctest.h>
#include <ev.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "../shell/child_process.hpp"
#include "sandbox_support.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

Spawned spawn_confined(ShellFixture& fx, const ScratchDir& scratch, ShellConfig config) {
  SpawnRequest r;
  r.cwd = scratch.path();
  return fx.spawn(std::move(config), r);
}

// Field 4 of /proc/PID/stat (the fields start after comm's last ')'), and comm.
pid_t parent_of(pid_t pid, std::string* comm = nullptr) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos) return -1;
  if (comm) *comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 2));
  char state;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return ppid;
}

}  // namespace

TEST_CASE("each escape from the process group is gone after close, with no zombies") {
  ScratchDir scratch;
  ShellFixture fx;
  auto s = spawn_confined(fx, scratch, sandbox_config(fx, SandboxMode::workspace_write));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  fx.type(*s.session, "setsid sleep 300 &");
  fx.type(*s.session, "nohup sleep 300 >/dev/null 2>&1 &");
  fx.type(*s.session, "(sleep 300 &)");
  fx.type(*s.session, "sleep 300 & disown");
  fx.type(*s.session, R"(bash -c "trap '' HUP TERM; sleep 300" &)");
  fx.type(*s.session, R"((setsid bash -c '(sleep 300 </dev/null >/dev/null 2>&1 &); exit' &))");
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() >= 6; }));

  Status st = fx.close(*s.session);
  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  CHECK(s.shell()->quiescent());
  CHECK(s.shell()->output_ended());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  CHECK(zombie_children().empty());
}

TEST_CASE("a fork storm of 500+ processes is gone after close while the loop keeps running") {
  ScratchDir scratch;
  ShellFixture fx;
  auto s = spawn_confined(fx, scratch, sandbox_config(fx, SandboxMode::read_only));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  fx.type(*s.session,
          R"((trap '' HUP TERM; for i in $(seq 2000); do sleep 300 & done; wait) >/dev/null 2>&1 &)");
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes(fx.marker()).size() >= 520; }, 60s));

  int ticks = 0;
  ev_timer tick;
  ev_timer_init(&tick, [](struct ev_loop*, ev_timer* w, int) { ++*static_cast<int*>(w->data); },
                0.01, 0.01);
  tick.data = &ticks;
  ev_timer_start(fx.loop(), &tick);
  Status st = fx.close(*s.session, 60s);
  ev_timer_stop(fx.loop(), &tick);
  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  // The storm ignores HUP/TERM, so the teardown lasts at least the grace: a blocked loop
  // would show no tick at all.
  CHECK(ticks >= 2);
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  CHECK(zombie_children().empty());
}

namespace {

// In the child: two confined sessions with escapes, then wait to be SIGKILLed.
int confined_host(const std::string& marker, const std::string& cwd, int report) {
  ShellFixture fx;
  auto config = sandbox_config(fx, SandboxMode::workspace_write);
  config.env["DSHPTY_TEST_MARK"] = marker;
  std::vector<Spawned> sessions;
  for (int i = 0; i < 2; ++i) {
    SpawnRequest r;
    r.cwd = cwd;
    sessions.push_back(fx.spawn(config, r));
    if (!sessions.back().session) return 1;
    fx.type(*sessions.back().session,
            R"(sleep 300 & setsid sleep 300 & bash -c "trap '' HUP TERM; sleep 300" &)");
  }
  if (!run_until(fx.loop(), [&] { return marked_processes_named(marker, "sleep").size() >= 6; })) {
    return 2;
  }
  char ready = 'R';
  if (::write(report, &ready, 1) != 1) return 3;
  for (;;) ev_run(fx.loop(), 0);  // until SIGKILLed
}

}  // namespace

TEST_CASE("a SIGKILLed host leaves nothing of its sandboxes alive") {
  ScratchDir scratch;
  std::string marker = fresh_marker("sandbox-host-death");
  auto child = fork_child([&](int report) { return confined_host(marker, scratch.path(), report); });
  REQUIRE(child.pid > 0);
  char byte = 0;
  CHECK(read_byte(child, 30s, byte));
  CHECK(marked_processes_named(marker, "sleep").size() >= 6);

  ::kill(child.pid, SIGKILL);
  wait_child(child, 10s);
  close_child(child);
  // Bounded wait: /proc is polled until the marker is gone or the deadline passes.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  std::vector<pid_t> left = marked_processes(marker);
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
    left = marked_processes(marker);
  }
  CHECK(left.empty());
  kill_marked(marker);
}

TEST_CASE("a helper that does not answer: close kills the namespace's init, bwrap ends, the close says so") {
  ScratchDir scratch;
  ShellFixture fx;
  auto s = spawn_confined(fx, scratch, sandbox_config(fx, SandboxMode::workspace_write));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  fx.type(*s.session, "setsid sleep 300 &");
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 1; }));
  // The helper is the shell's parent (the namespace's init), the outer bwrap its parent.
  std::string comm;
  const pid_t helper = parent_of(static_cast<pid_t>(*s.session->pid()));
  const pid_t bwrap = parent_of(helper, &comm);
  REQUIRE(comm == "dshpty-supervis");
  REQUIRE(bwrap == s.shell()->helper_pid());
  parent_of(bwrap, &comm);
  REQUIRE(comm == "bwrap");
  // Stopped, it neither hears the kill nor reports quiescence: as if a process of the
  // session had taken its control socket.
  REQUIRE(::kill(helper, SIGSTOP) == 0);

  Status st = fx.close(*s.session, 60s);
  REQUIRE_FALSE(st.ok());
  const std::string said = describe(st.error());
  CHECK_MESSAGE(said.find("PTY supervisor did not report quiescence within") != std::string::npos, said);
  CHECK_MESSAGE(said.find("the sandbox's namespace init (the helper, pid " + std::to_string(helper) +
                          ") was killed through its pidfd, and its bwrap (pid " + std::to_string(bwrap) +
                          ") ended with it") != std::string::npos,
                said);
  CHECK_MESSAGE(said.find("every process of the session is gone") != std::string::npos, said);
  CHECK(s.shell()->quiescent());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  CHECK(::kill(helper, 0) < 0);
  CHECK(::kill(bwrap, 0) < 0);
  CHECK(zombie_children().empty());
  // Reported once: the next close finds the tree gone and completes.
  Status again = fx.close(*s.session);
  CHECK_MESSAGE(again.ok(), (again ? "" : describe(again.error())));
}
