// What an observer sees of a shell session (docs/watch.md): the emulator's screen as the loop
// read it, at the prompt or busy with the foreground job's command line, without reading,
// writing or signalling anything; and nothing at all when the backend allows no observers.
#include <doctest/doctest.h>

#include <string>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

bool shows(const ScreenSnapshot& shot, const std::string& text) {
  for (const auto& line : shot.lines)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("an observer sees the screen, at the prompt or busy with the job's command") {
  ShellFixture fx;
  Spawned s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto echoed = fx.send(*s.session, "echo observed-$((6*7))");
  REQUIRE_MESSAGE(echoed, show(echoed));

  auto view = s.session->observe();
  REQUIRE_MESSAGE(view, describe(view.error()));
  CHECK(shows(view->screen, "observed-42"));
  CHECK(view->screen.rows == 40);
  CHECK(view->screen.cols == 160);
  CHECK(view->activity == ObservedActivity::prompt);
  CHECK_FALSE(view->command);

  // A job in the foreground: busy, with its command line (never the typed text: that may
  // be a password; here they agree).
  auto job = fx.send(*s.session, test::request("sleep 30", 300ms, 60s));
  REQUIRE_MESSAGE(job, show(job));
  CHECK(job->wait_reason == WaitReason::inferred_idle);
  view = s.session->observe();
  REQUIRE(view);
  CHECK(view->activity == ObservedActivity::busy);
  CHECK(view->command == std::optional<std::string>("sleep 30"));

  // Observing moved nothing: the next result still holds only its own output.
  bool done = false;
  REQUIRE(s.session->signal(Signal::sigint, [&](Result<SignalResult>) { done = true; }));
  run_until(fx.loop(), [&] { return done; });
  auto after = fx.send(*s.session, "echo after-$((1+1))");
  REQUIRE_MESSAGE(after, show(after));
  CHECK(after->viewport.find("after-2") != std::string::npos);
  CHECK(after->viewport.find("observed-42") == std::string::npos);
  CHECK(fx.close(*s.session));
}

TEST_CASE("watchable = false: no observer sees anything, the owner still does") {
  ShellFixture fx;
  ShellConfig config = fx.config();
  config.watchable = false;
  Spawned s = fx.spawn(config);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto view = s.session->observe();
  REQUIRE_FALSE(view);
  CHECK(view.error()->code == Code::INVALID_ARGUMENT);
  CHECK(view.error()->message.find("allows no observers") != std::string::npos);
  CHECK(s.session->screen());  // the owner's own look is not an observer's
  CHECK(fx.close(*s.session));
}
