// A result's text through a real bash, read off the screen (docs/shell-backend.md, "Result
// text"): cursor moves, erases, spinners and multi-line redraws read as the screen shows
// them; a program that draws on the alternate screen and exits leaves no debris on the next
// prompt; output printed before a full-screen program starts is in the result.
#include <doctest/doctest.h>

#include <string>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

// The command's output, as the result shows it after the command's own line.
std::string output_of(ShellFixture& fx, BackendSession& session, const std::string& command) {
  auto r = fx.send(session, request(command, std::nullopt, 30s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  const std::string head = command + "\n";
  REQUIRE_MESSAGE(r->viewport.starts_with(head), show(r));
  return r->viewport.substr(head.size());
}

}  // namespace

TEST_CASE("cursor moves, spinners and redraws read as the screen shows them") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  BackendSession& session = *s.session;
  CHECK(output_of(fx, session, R"(printf 'aaaa\e[1Gbb\n')") == "bbaa\ndsh> ");
  CHECK(output_of(fx, session, R"(printf 'abcdef\e[3Dxy\n')") == "abcxyf\ndsh> ");
  CHECK(output_of(fx, session, R"(printf 'x\e[10Cy\n')") == "x          y\ndsh> ");
  CHECK(output_of(fx, session, R"(printf 'frame1\e[1G\e[0Kframe2\e[1G\e[0Kdone\n')") == "done\ndsh> ");
  CHECK(output_of(fx, session, R"(printf 'a\tb\n')") == "a\tb\ndsh> ");
  CHECK(output_of(fx, session, R"(printf '50%%\r100%%\n')") == "100%\ndsh> ");
  // Three bars redrawn 20 times with the cursor moved up: three lines, as on the screen.
  CHECK(output_of(fx, session,
                  R"(for i in $(seq 1 20); do [ $i -gt 1 ] && printf '\e[3A'; )"
                  R"(for b in 1 2 3; do printf '\r\e[Kbar %d: %d\n' $b $i; done; done)") ==
        "bar 1: 20\nbar 2: 20\nbar 3: 20\ndsh> ");
  // More than a screenful: the rows that scrolled off are kept, in order.
  std::string expected;
  for (int i = 1; i <= 300; ++i) expected += std::to_string(i) + "\n";
  CHECK(output_of(fx, session, "seq 1 300") == expected + "dsh> ");
  CHECK(fx.close(session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a program that draws on the alternate screen and exits leaves the next prompt clean") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // htop's and watch's last frame, then their exit back to the normal screen.
  CHECK(output_of(fx, *s.session, R"(printf '\e[?1049h\e[H\e[2JF1Help F2Setup F3Search F10Quit\e[?1049l')") ==
        "dsh> ");
  CHECK(output_of(fx, *s.session, R"(printf '\e[?1049h\e[H\e[2JEvery 2.0s: date\n\n12:00:00\e[?1049l'; echo after)") ==
        "after\ndsh> ");
  CHECK(fx.close(*s.session).ok());
}

TEST_CASE("output before a full-screen program starts is in its result, without the screen's rows") {
  ShellFixture fx;
  SpawnRequest xterm;
  xterm.options = {{"terminal", "xterm"}};
  auto s = fx.spawn(fx.config(), xterm);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  BackendSession& session = *s.session;
  auto r = fx.send(session, request("echo IMPORTANT; seq 1 3; vim -u NONE -N -n -i NONE", 500ms, 30s));
  REQUIRE_MESSAGE(r, show(r));
  REQUIRE_MESSAGE(r->screen, show(r));
  CHECK(r->screen->alternate);
  CHECK_MESSAGE(r->viewport.find("\nIMPORTANT\n1\n2\n3\n") != std::string::npos, show(r));
  CHECK_MESSAGE(r->viewport.find('~') == std::string::npos, show(r));
  SendRequest escape;
  escape.keys = {"Escape"};
  escape.submit = false;
  escape.idle = 200ms;
  escape.timeout = 30s;
  REQUIRE(fx.send(session, escape));
  auto quit = fx.send(session, request(":q", std::nullopt, 30s));
  REQUIRE_MESSAGE(quit, show(quit));
  CHECK_FALSE(quit->screen);
  // Nothing of vim's screen, and what the earlier result showed is not shown again.
  CHECK_MESSAGE(quit->viewport.find("IMPORTANT") == std::string::npos, show(quit));
  CHECK_MESSAGE(quit->viewport.find('~') == std::string::npos, show(quit));
  CHECK(fx.close(session).ok());
}
