// Full-screen programs through the emulator: real vim, less, top and a curses menu driven
// by named keys, read back as screens; resize reaching the program; terminal queries
// answered; wide and combining characters in their cells; bad keys and sizes refused with
// the session unharmed. Every wait is for what the screen must come to show, never a sleep.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

// A temp dir the test owns, removed at the end whatever happens.
struct TempDir {
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dshpty-screen-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::filesystem::path path;
};

std::string joined(const ScreenSnapshot& shot) {
  std::string out;
  for (const std::string& line : shot.lines) out += line + "\n";
  return out;
}

std::string describe_screen(BackendSession& session) {
  auto shot = session.screen();
  if (!shot) return describe(shot.error());
  std::ostringstream out;
  out << "[screen " << shot->rows << "x" << shot->cols << " cursor " << shot->cursor_row << ","
      << shot->cursor_col << (shot->alternate ? " alternate" : "") << "]\n"
      << joined(*shot);
  return out.str();
}

// Runs the loop until the screen satisfies `pred` (bounded, like every wait here).
bool screen_until(ShellFixture& fx, BackendSession& session, const std::function<bool(const ScreenSnapshot&)>& pred) {
  return run_until(fx.loop(), [&] {
    auto shot = session.screen();
    return shot && pred(*shot);
  }, 30s);
}

bool shows(const ScreenSnapshot& shot, const std::string& text) { return joined(shot).find(text) != std::string::npos; }

// Keys (and optional text), not submitted: completes when the program goes quiet.
Result<SendResult> press(ShellFixture& fx, BackendSession& session, std::vector<std::string> keys, std::string text = {}) {
  SendRequest r;
  r.text = std::move(text);
  r.keys = std::move(keys);
  r.submit = false;
  r.idle = 200ms;
  r.timeout = 30s;
  return fx.send(session, std::move(r));
}

// A command typed at the prompt that starts a full-screen program: it completes when the
// program goes quiet (it has the terminal, so never at a prompt).
Result<SendResult> start(ShellFixture& fx, BackendSession& session, std::string command) {
  return fx.send(session, request(std::move(command), 300ms, 30s));
}

Spawned spawn_xterm(ShellFixture& fx, unsigned rows = 24, unsigned cols = 80) {
  SpawnRequest request;
  request.options = {{"terminal", "xterm"}, {"rows", std::to_string(rows)}, {"cols", std::to_string(cols)}};
  return fx.spawn(fx.config(), request);
}

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

}  // namespace

TEST_CASE("vim edits a file through keys; the screen shows the text and -- INSERT --") {
  TempDir dir;
  ShellFixture fx;
  auto s = spawn_xterm(fx);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  BackendSession& session = *s.session;
  auto file = dir.path / "notes.txt";
  REQUIRE(start(fx, session, "vim -u NONE -N -n -i NONE " + quoted(file)));
  REQUIRE_MESSAGE(screen_until(fx, session, [](const ScreenSnapshot& shot) { return shot.alternate && shows(shot, "notes.txt"); }),
                  describe_screen(session));

  auto typed = press(fx, session, {}, "i");
  REQUIRE_MESSAGE(typed, show(typed));
  typed = press(fx, session, {}, "hello from dshpty");
  REQUIRE_MESSAGE(typed, show(typed));
  REQUIRE_MESSAGE(screen_until(fx, session, [](const ScreenSnapshot& shot) {
                    return shot.lines.size() > 0 && shot.lines[0] == "hello from dshpty" && shows(shot, "-- INSERT --");
                  }), describe_screen(session));
  // A send that completes on the alternate screen carries it.
  REQUIRE(typed->screen);
  CHECK(typed->screen->alternate);

  auto saved = press(fx, session, {"Escape"}, "");
  REQUIRE_MESSAGE(saved, show(saved));
  auto quit = fx.send(session, request(":wq", std::nullopt, 30s));
  REQUIRE_MESSAGE(quit, show(quit));
  CHECK_MESSAGE(quit->wait_reason == WaitReason::stdin_read, show(quit));
  CHECK_MESSAGE(quit->exit_code == 0, show(quit));
  CHECK_FALSE(quit->screen);  // back on the main screen
  std::ifstream in(file);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "hello from dshpty\n");
  CHECK(fx.close(session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("less pages with Space and quits with q, the main screen back after") {
  TempDir dir;
  ShellFixture fx;
  auto s = spawn_xterm(fx);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  BackendSession& session = *s.session;
  auto file = dir.path / "numbers.txt";
  {
    std::ofstream out(file);
    for (int i = 1; i <= 200; ++i) out << "line " << i << "\n";
  }
  REQUIRE(start(fx, session, "less " + quoted(file)));
  REQUIRE_MESSAGE(screen_until(fx, session, [](const ScreenSnapshot& shot) {
                    return shot.alternate && !shot.lines.empty() && shot.lines[0] == "line 1";
                  }), describe_screen(session));
  CHECK_FALSE(shows(*session.screen(), "not fully functional"));
  REQUIRE(press(fx, session, {"Space"}));
  // One page on: 23 lines of text per 24-row screen.
  REQUIRE_MESSAGE(screen_until(fx, session, [](const ScreenSnapshot& shot) {
                    return !shot.lines.empty() && shot.lines[0] == "line 24";
                  }), describe_screen(session));
  auto quit = fx.send(session, [] {
    SendRequest r;
    r.keys = {"q"};
    r.timeout = 30s;
    return r;
  }());
  REQUIRE_MESSAGE(quit, show(quit));
  CHECK_MESSAGE(quit->wait_reason == WaitReason::stdin_read, show(quit));
  CHECK_FALSE(session.screen()->alternate);
  CHECK(fx.close(session).ok());
}

// (procps-ng 4's top clears the main screen rather than switching to the alternate one; it
// does turn on application cursor keys and hide the cursor.)
TEST_CASE("top draws its header, cursor hidden, in xterm mode") {
  ShellFixture fx;
  auto s = spawn_xterm(fx);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  BackendSession& session = *s.session;
  REQUIRE(start(fx, session, "top -d 1"));
  REQUIRE_MESSAGE(screen_until(fx, session, [](const ScreenSnapshot& shot) {
                    return !shot.cursor_visible && !shot.lines.empty() && shot.lines[0].rfind("top - ", 0) == 0 &&
                           shows(shot, "PID");
                  }), describe_screen(session));
  SendRequest quit;
  quit.keys = {"q"};
  quit.timeout = 30s;
  auto r = fx.send(session, quit);
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK(fx.close(session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a curses menu reached with Down Down Enter reports the third item (application cursor keys)") {
  ShellFixture fx;
  auto s = spawn_xterm(fx);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  BackendSession& session = *s.session;
  REQUIRE(start(fx, session, "/usr/bin/python3 " DSHPTY_TEST_FIXTURES "/menu.py"));
  REQUIRE_MESSAGE(screen_until(fx, session, [](const ScreenSnapshot& shot) { return shot.alternate && shows(shot, "> first"); }),
                  describe_screen(session));
  SendRequest pick;
  pick.keys = {"Down", "Down", "Enter"};
  pick.timeout = 30s;
  auto r = fx.send(session, pick);
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->viewport.find("chose: third") != std::string::npos, show(r));
  CHECK(r->exit_code == 0);
  CHECK(fx.close(session).ok());
}

TEST_CASE("stty size follows a resize, and the screen has the new size") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  BackendSession& session = *s.session;
  auto initial = session.screen();
  REQUIRE(initial);
  auto before = fx.send(session, "stty size");
  REQUIRE_MESSAGE(before, show(before));
  std::string size = std::to_string(initial->rows) + " " + std::to_string(initial->cols) + "\n";
  CHECK_MESSAGE(before->viewport.find(size) != std::string::npos, show(before));
  REQUIRE(session.resize(30, 100).ok());
  auto after = fx.send(session, "stty size");
  REQUIRE_MESSAGE(after, show(after));
  CHECK_MESSAGE(after->viewport.find("30 100\n") != std::string::npos, show(after));
  auto shot = session.screen();
  REQUIRE(shot);
  CHECK(shot->rows == 30);
  CHECK(shot->cols == 100);
  CHECK(fx.close(session).ok());
}

TEST_CASE("a program asking where the cursor is gets an answer, in both terminal modes") {
  for (const char* terminal : {"dumb", "xterm"}) {
    CAPTURE(terminal);
    ShellFixture fx;
    SpawnRequest spawn;
    spawn.options = {{"terminal", terminal}};
    auto s = fx.spawn(fx.config(), spawn);
    REQUIRE_MESSAGE(s.session, describe(s.error));
    auto r = fx.send(*s.session, request(R"(printf '\033[6n'; IFS= read -rs -d R -t 10 reply; echo "got:${reply#*[}")",
                                         std::nullopt, 30s));
    REQUIRE_MESSAGE(r, show(r));
    auto at = r->viewport.rfind("got:");  // the output's, not the command line's
    REQUIRE(at != std::string::npos);
    std::string answer = r->viewport.substr(at + 4, r->viewport.find('\n', at) - at - 4);
    CHECK_MESSAGE(answer.find(';') != std::string::npos, answer);
    CHECK_MESSAGE(answer.find_first_not_of("0123456789;") == std::string::npos, answer);
    CHECK(fx.close(*s.session).ok());
  }
}

TEST_CASE("wide and combining characters sit in their cells") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // 中文, a space, e + U+0301, then a column marker after the cursor position report.
  auto r = fx.send(*s.session, R"(printf '\033[H\033[2J\344\270\255\346\226\207 e\314\201x\n')");
  REQUIRE_MESSAGE(r, show(r));
  auto shot = s.session->screen();
  REQUIRE(shot);
  INFO(joined(*shot));
  REQUIRE(shot->lines.size() >= 2);
  CHECK(shot->lines[0] == "\xE4\xB8\xAD\xE6\x96\x87 e\xCC\x81x");
  auto moved = fx.send(*s.session, R"(printf '\033[H\033[2J\344\270\255\346\226\207X')");
  REQUIRE_MESSAGE(moved, show(moved));
  shot = s.session->screen();
  REQUIRE(shot);
  // The prompt follows on the same row: X is in column 4 (two wide characters before it).
  CHECK(shot->lines[0].rfind("\xE4\xB8\xAD\xE6\x96\x87X", 0) == 0);
  CHECK(fx.close(*s.session).ok());
}

TEST_CASE("bad key names and sizes fail clearly, nothing is written, the session goes on") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  BackendSession& session = *s.session;
  SendRequest bad;
  bad.text = "echo should-not-run";
  bad.keys = {"Enter", "NoSuchKey"};
  auto r = fx.send(session, bad);
  REQUIRE_FALSE(r);
  CHECK(r.error()->code == Code::INVALID_ARGUMENT);
  CHECK(r.error()->message.find("\"NoSuchKey\"") != std::string::npos);
  for (auto [rows, cols] : {std::pair{0u, 80u}, std::pair{24u, 0u}, std::pair{5000u, 80u}, std::pair{24u, 5000u}}) {
    Status st = session.resize(rows, cols);
    REQUIRE_FALSE(st);
    CHECK(st.error()->code == Code::INVALID_ARGUMENT);
  }
  auto ok = fx.send(session, "echo still-here");
  REQUIRE_MESSAGE(ok, show(ok));
  CHECK(ok->viewport.find("should-not-run") == std::string::npos);
  CHECK(ok->viewport.find("still-here\n") != std::string::npos);
  auto shot = session.screen();
  REQUIRE(shot);
  CHECK(shot->rows == fx.config().rows);
  CHECK(fx.close(session).ok());
}
