// Bad input fails with a clear error naming what was wrong, and an abort
// at any step of the set-up leaves nothing behind.
#include <doctest/doctest.h>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

void check_nothing_left(const ShellFixture& fx) {
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}

bool contains(const Error& e, const std::string& text) {
  return e && e->message.find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("a missing shell fails naming the path") {
  ShellFixture fx;
  int fds = count_open_fds();
  auto config = fx.config();
  config.argv = {"/nonexistent/dshpty-shell", "-i"};
  auto s = fx.spawn(config);
  REQUIRE_FALSE(s.session);
  CHECK(s.error->code == Code::BACKEND_FAILED);
  CHECK_MESSAGE(contains(s.error, "/nonexistent/dshpty-shell"), describe(s.error));
  CHECK(count_open_fds() == fds);
  check_nothing_left(fx);
}

TEST_CASE("a shell that is not executable fails in the helper, naming the path") {
  ShellFixture fx;
  auto config = fx.config();
  config.argv = {"dshpty-no-such-relative-shell"};  // relative: only execve can tell
  auto s = fx.spawn(config);
  REQUIRE_FALSE(s.session);
  CHECK_MESSAGE(contains(s.error, "dshpty-no-such-relative-shell"), describe(s.error));
  check_nothing_left(fx);
}

TEST_CASE("a missing cwd fails naming the path") {
  ShellFixture fx;
  int fds = count_open_fds();
  SpawnRequest request;
  request.cwd = "/nonexistent/dshpty-cwd";
  auto s = fx.spawn(fx.config(), request);
  REQUIRE_FALSE(s.session);
  CHECK_MESSAGE(contains(s.error, "/nonexistent/dshpty-cwd"), describe(s.error));
  CHECK(count_open_fds() == fds);

  auto config = fx.config();
  config.cwd = "/etc/passwd";  // not a directory
  s = fx.spawn(config);
  REQUIRE_FALSE(s.session);
  CHECK_MESSAGE(contains(s.error, "/etc/passwd"), describe(s.error));
  check_nothing_left(fx);
}

TEST_CASE("a missing supervisor helper fails naming the path") {
  ShellFixture fx;
  auto config = fx.config();
  config.supervisor_path = "/nonexistent/dshpty-supervisor";
  auto s = fx.spawn(config);
  REQUIRE_FALSE(s.session);
  CHECK_MESSAGE(contains(s.error, "/nonexistent/dshpty-supervisor"), describe(s.error));
  check_nothing_left(fx);
}

TEST_CASE("rows and cols of 0 or above 4096 are INVALID_ARGUMENT") {
  ShellFixture fx;
  for (const auto& option : std::vector<std::pair<std::string, std::string>>{
           {"rows", "0"}, {"rows", "4097"}, {"cols", "0"}, {"cols", "100000"},
           {"rows", "-1"}, {"cols", "12x"}}) {
    const std::string& key = option.first;  // no structured bindings: clang 14 cannot capture them
    const std::string& value = option.second;
    SpawnRequest request;
    request.options[key] = value;
    auto s = fx.spawn(fx.config(), request);
    REQUIRE_FALSE(s.session);
    CHECK_MESSAGE(s.error->code == Code::INVALID_ARGUMENT, key, "=", value, ": ", describe(s.error));
  }
  auto config = fx.config();
  config.rows = 0;
  auto s = fx.spawn(config);
  REQUIRE_FALSE(s.session);
  CHECK(s.error->code == Code::INVALID_ARGUMENT);
  config = fx.config();
  config.cols = 5000;
  s = fx.spawn(config);
  REQUIRE_FALSE(s.session);
  CHECK(s.error->code == Code::INVALID_ARGUMENT);
  check_nothing_left(fx);
}

TEST_CASE("an unknown spawn option is INVALID_ARGUMENT naming it") {
  ShellFixture fx;
  SpawnRequest request;
  request.options["colour"] = "on";
  auto s = fx.spawn(fx.config(), request);
  REQUIRE_FALSE(s.session);
  CHECK_MESSAGE(s.error->code == Code::INVALID_ARGUMENT, describe(s.error));
  CHECK_MESSAGE(contains(s.error, "\"colour\""), describe(s.error));
  check_nothing_left(fx);
}

TEST_CASE("a shell that exits during start-up fails the spawn cleanly") {
  ShellFixture fx;
  auto config = fx.config();
  config.argv = {"/bin/bash", "--noprofile", "--norc", "-c", "sleep 300 & exit 4"};
  auto s = fx.spawn(config);
  REQUIRE_FALSE(s.session);
  CHECK_MESSAGE(contains(s.error, "exited during start-up"), describe(s.error));
  check_nothing_left(fx);
}

TEST_CASE("no prompt before the start-up timeout fails the spawn cleanly") {
  ShellFixture fx;
  auto config = fx.config();
  config.argv = {"/bin/sleep", "300"};
  config.startup_timeout = 200ms;
  auto s = fx.spawn(config);
  REQUIRE_FALSE(s.session);
  CHECK_MESSAGE(contains(s.error, "no prompt"), describe(s.error));
  check_nothing_left(fx);
}

TEST_CASE("an abort already fired fails with its exact reason and starts nothing") {
  ShellFixture fx;
  AbortController controller;
  Error reason = make_error(Code::ABORTED, "test abort");
  controller.abort(reason);
  auto s = fx.spawn(fx.config(), {}, controller.signal());
  REQUIRE_FALSE(s.session);
  CHECK(s.error == reason);
  check_nothing_left(fx);
}

TEST_CASE("an abort at each step of the set-up fails with its reason and leaves nothing") {
  ShellFixture fx;
  int fds = count_open_fds();
  // Abort after k loop iterations, for k = 0, 1, 2, ... until the spawn wins the race:
  // that walks the abort through every step (launch, started, output, first prompt).
  bool spawn_won = false;
  for (int k = 0; k < 200 && !spawn_won; ++k) {
    CAPTURE(k);
    AbortController controller;
    Error reason = make_error(Code::ABORTED, "abort at step " + std::to_string(k));
    auto backend = make_shell_backend(fx.loop(), fx.config());
    SpawnSpec spec;
    spec.session_id = "pty-abort-" + std::to_string(k);
    spec.signal = controller.signal();
    bool done = false;
    std::unique_ptr<BackendSession> session;
    Error error;
    backend->spawn(std::move(spec), [&](Result<std::unique_ptr<BackendSession>> r) {
      done = true;
      if (r) {
        session = std::move(r.value());
      } else {
        error = r.error();
      }
    });
    for (int i = 0; i < k && !done; ++i) ev_run(fx.loop(), EVRUN_ONCE);
    controller.abort(reason);
    REQUIRE(run_until(fx.loop(), [&] { return done; }));
    if (session) {
      spawn_won = true;  // completed before the abort: a normal session now
      Status st = fx.close(*session);
      CHECK(st.ok());
    } else {
      CHECK_MESSAGE(error == reason, describe(error));
    }
    check_nothing_left(fx);
  }
  CHECK(spawn_won);
  CHECK(count_open_fds() == fds);
}
