// Every escape of the shell suite, inside a sandbox: gone when close completes. And a host
// SIGKILLed with confined sessions open leaves nothing of them (the helpers see EOF, and
// bwrap's --die-with-parent takes each namespace down with its init).
#include <doctest/doctest.h>
#include <ev.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
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
