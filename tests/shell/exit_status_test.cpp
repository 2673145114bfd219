// Nothing lost at exit, and exit statuses from the helper.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

TEST_CASE("exit 3 gives code 3, and the tree is gone after close") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(s.session->pid().has_value());
  CHECK(s.session->status().running());
  fx.type(*s.session, "exit 3");
  REQUIRE(run_until(fx.loop(), [&] { return !s.session->status().running(); }));
  CHECK(s.session->status() == SessionStatus::exited_with_code(3));
  Status st = fx.close(*s.session);
  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  CHECK(s.shell()->quiescent());
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}

TEST_CASE("kill -9 $$ gives signal SIGKILL and no code") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  fx.type(*s.session, "kill -9 $$");
  REQUIRE(run_until(fx.loop(), [&] { return !s.session->status().running(); }));
  CHECK(s.session->status() == SessionStatus::exited_by_signal(SIGKILL));
  CHECK_FALSE(s.session->status().exit_code.has_value());
  Status st = fx.close(*s.session);
  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}

TEST_CASE("a shell that prints 100,000 bytes and exits delivers every byte before its exit") {
  ShellFixture fx;
  std::size_t received = 0;
  auto config = fx.config();
  // 'X' never appears in the echoed command line (tr gets it in octal).
  config.on_raw_output = [&](std::string_view, std::string_view bytes) {
    received += static_cast<std::size_t>(std::count(bytes.begin(), bytes.end(), 'X'));
  };
  auto s = fx.spawn(config);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  fx.type(*s.session, R"(head -c 100000 /dev/zero | tr '\0' '\130'; exit)");
  std::size_t at_exit = 0;
  REQUIRE(run_until(fx.loop(), [&] {
    if (s.session->status().running()) return false;
    at_exit = received;
    return true;
  }));
  CHECK(at_exit == 100000);
  CHECK(s.session->status() == SessionStatus::exited_with_code(0));
  Status st = fx.close(*s.session);
  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  CHECK(received == 100000);
  CHECK(marked_processes(fx.marker()).empty());
}
