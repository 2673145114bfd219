// Every escape from the process group is captured and gone after
// close, a fork storm too, with the host's loop running throughout the teardown.
#include <doctest/doctest.h>
#include <ev.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

TEST_CASE("each escape from the process group is gone after close, with no zombies") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  fx.type(*s.session, "setsid sleep 300 &");
  fx.type(*s.session, "nohup sleep 300 >/dev/null 2>&1 &");
  fx.type(*s.session, "(sleep 300 &)");
  fx.type(*s.session, "sleep 300 & disown");
  fx.type(*s.session, R"(bash -c "trap '' HUP TERM; sleep 300" &)");
  // A double-fork daemon: the middle process leaves a new session's grandchild behind.
  fx.type(*s.session, R"((setsid bash -c '(sleep 300 </dev/null >/dev/null 2>&1 &); exit' &))");
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() >= 6; }));

  Status st = fx.close(*s.session);
  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  CHECK(s.shell()->quiescent());
  CHECK(s.shell()->output_ended());
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}

TEST_CASE("a fork storm of 500+ processes is gone after close while the loop keeps running") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // Ignores HUP and TERM and keeps forking while the teardown runs (bounded at 2000).
  fx.type(*s.session,
          R"((trap '' HUP TERM; for i in $(seq 2000); do sleep 300 & done; wait) >/dev/null 2>&1 &)");
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes(fx.marker()).size() >= 520; }, 60s));

  int ticks = 0;
  ev_timer tick;
  ev_timer_init(&tick, [](struct ev_loop*, ev_timer* w, int) { ++*static_cast<int*>(w->data); },
                0.01, 0.01);
  tick.data = &ticks;
  ev_timer_start(fx.loop(), &tick);
  auto started = std::chrono::steady_clock::now();
  Status st = fx.close(*s.session, 60s);
  auto elapsed = std::chrono::steady_clock::now() - started;
  ev_timer_stop(fx.loop(), &tick);

  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  MESSAGE("storm teardown: ", std::chrono::duration<double, std::milli>(elapsed).count(),
          " ms, loop ticks meanwhile: ", ticks);
  // The teardown takes at least the grace (the storm ignores HUP/TERM): a blocked loop
  // would show no tick at all.
  CHECK(ticks >= 2);
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}

TEST_CASE("a fork storm started before the first prompt (from the rcfile) is gone after close") {
  ShellFixture fx;
  char dir_template[] = "/tmp/dshpty-rcfile-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  const std::string dir = dir_template;
  const std::string rcfile = dir + "/rc";
  {
    std::FILE* rc = std::fopen(rcfile.c_str(), "w");
    REQUIRE(rc);
    // Started before bash turns job control on: the storm shares the shell's process group.
    std::fputs("(trap '' HUP TERM; for ((i=0; i<2000; i++)); do sleep 300 & done; wait) "
               ">/dev/null 2>&1 &\nPS1='dsh> '\n", rc);
    std::fclose(rc);
  }
  auto config = fx.config();
  config.argv = {"/bin/bash", "--noprofile", "--rcfile", rcfile, "-i"};
  config.close_grace = std::chrono::milliseconds(0);
  auto s = fx.spawn(config);
  std::remove(rcfile.c_str());
  ::rmdir(dir.c_str());
  REQUIRE_MESSAGE(s.session, describe(s.error));
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes(fx.marker()).size() >= 100; }, 60s));
  Status st = fx.close(*s.session, 60s);
  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}
