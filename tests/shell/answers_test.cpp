// Terminal answers go only to a reader that asked (docs/shell-backend.md, "Terminal
// answers"): a file full of queries printed by `cat` must not type the emulator's answers
// into the shell (the next send would arrive garbled behind them), while a program reading
// its answer in raw mode (a python3 reader, vim under xterm) still gets it. Real shells and
// programs; what reached the shell is read back from its history, a side effect the
// answers could not hide.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "local/launch_plan.hpp"
#include "dshpty/remote.hpp"
#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

struct TempDir {
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dshpty-answers-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::filesystem::path path;
};

// DA1, DSR (cursor), DA2, DECRQSS (SGR), OSC 10 and 11 (colours), DSR (status): every
// query the emulator answers.
constexpr const char* kQueries = "\x1b[c\x1b[6n\x1b[>c\x1bP$qm\x1b\\\x1b]10;?\x07\x1b]11;?\x07\x1b[5n";

std::filesystem::path write_file(const std::filesystem::path& dir, const std::string& name, const std::string& body) {
  std::filesystem::path path = dir / name;
  std::ofstream(path, std::ios::binary) << body;
  return path;
}

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

bool on_path(const char* program) {
  std::string command = std::string("command -v ") + program + " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

// Pieces of the emulator's answers, as they would look once a line editor ate the
// escapes: none may reach the shell.
bool cursor_report(const std::string& text, std::size_t at) {  // DIGITS;DIGITSR from `at`
  std::size_t end = text.find_first_not_of("0123456789", at);
  if (end == at || end == std::string::npos || text[end] != ';') return false;
  std::size_t col = text.find_first_not_of("0123456789", end + 1);
  return col != end + 1 && col != std::string::npos && text[col] == 'R';
}

bool holds_answer(const std::string& text) {
  for (const char* piece : {"1;2c", "100;0c", "rgb:", "$r"}) {
    if (text.find(piece) != std::string::npos) return true;
  }
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (cursor_report(text, at)) return true;
  }
  return false;
}

// The shell's own list of the lines it read (its in-memory history).
std::string history_of(ShellFixture& fx, BackendSession& session, const std::string& shell) {
  auto r = fx.send(session, shell == "zsh" ? "fc -ln 1" : "history");
  REQUIRE_MESSAGE(r, show(r));
  return r->viewport;
}

// `echo THIRD` at the prompt: exactly its own line, status 0.
void check_clean_send(ShellFixture& fx, BackendSession& session, const std::string& word = "THIRD") {
  auto r = fx.send(session, "echo " + word);
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->exit_code == std::optional<int>(0), show(r));
  CHECK_MESSAGE(r->viewport.rfind("echo " + word + "\n" + word + "\n", 0) == 0, show(r));
  CHECK_MESSAGE(!holds_answer(r->viewport), show(r));
}

Spawned spawn_shell(ShellFixture& fx, const std::string& shell) {
  SpawnRequest request;
  request.options = {{"shell", shell}, {"terminal", "xterm"}};
  return fx.spawn(fx.config(), request);
}

// A python3 program that asks in raw mode and reads its answer up to `end`.
std::string raw_reader(const std::string& query, char end) {
  return "python3 -c 'import os,sys,tty,termios\n"
         "fd=sys.stdin.fileno(); old=termios.tcgetattr(fd); tty.setraw(fd)\n"
         "os.write(1, b\"" + query + "\")\n"
         "got=b\"\"\n"
         "while not got.endswith(b\"" + std::string(1, end) + "\"): got+=os.read(fd, 1)\n"
         "termios.tcsetattr(fd, termios.TCSADRAIN, old)\n"
         "print(\"got:\"+got[2:].decode())'";
}

}  // namespace

TEST_CASE("cat of a file of queries types nothing into the shell; a raw reader still gets its answer") {
  TempDir dir;
  auto poisoned = write_file(dir.path, "poisoned", std::string("before") + kQueries + "after\n");
  for (const std::string shell : {"bash", "zsh", "fish"}) {
    CAPTURE(shell);
    if (!on_path(shell.c_str())) {
      MESSAGE("skipped: " << shell << " is not installed");
      continue;
    }
    ShellFixture fx;
    auto s = spawn_shell(fx, shell);
    REQUIRE_MESSAGE(s.session, describe(s.error));
    auto cat = fx.send(*s.session, "cat " + quoted(poisoned));
    REQUIRE_MESSAGE(cat, show(cat));
    CHECK_MESSAGE(cat->exit_code == std::optional<int>(0), show(cat));
    check_clean_send(fx, *s.session);
    check_clean_send(fx, *s.session, "FOURTH");
    // Twice more, the query file printed without a reader, then a send at once.
    auto again = fx.send(*s.session, "cat " + quoted(poisoned) + "; cat " + quoted(poisoned));
    REQUIRE_MESSAGE(again, show(again));
    check_clean_send(fx, *s.session, "FIFTH");

    // The positive control: a program reading in raw mode gets the cursor position and the
    // device attributes.
    if (on_path("python3")) {
      auto cpr = fx.send(*s.session, raw_reader("\\033[6n", 'R'));
      REQUIRE_MESSAGE(cpr, show(cpr));
      auto at = cpr->viewport.rfind("got:");  // the output's, not the command line's
      REQUIRE_MESSAGE(at != std::string::npos, show(cpr));
      CHECK_MESSAGE(cursor_report(cpr->viewport, at + 4), show(cpr));
      auto da = fx.send(*s.session, raw_reader("\\033[c", 'c'));
      REQUIRE_MESSAGE(da, show(da));
      CHECK_MESSAGE(da->viewport.find("got:?1;2c") != std::string::npos, show(da));
    }
    std::string history = history_of(fx, *s.session, shell);
    CHECK_MESSAGE(history.find("echo THIRD") != std::string::npos, history);
    CHECK_MESSAGE(!holds_answer(history), history);
    CHECK(fx.close(*s.session).ok());
  }
}

TEST_CASE("a query at the worst moment reaches nobody: asker gone, in the prompt, during sends") {
  ShellFixture fx;
  auto s = spawn_shell(fx, "bash");
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto& session = *s.session;

  // The asker writes its query in raw mode and exits at once, without reading (with and
  // without giving the terminal its modes back).
  for (const char* restore : {"termios.tcsetattr(fd, termios.TCSANOW, old)", "pass"}) {
    CAPTURE(restore);
    auto r = fx.send(session, std::string("python3 -c 'import os,sys,tty,termios\n"
                                          "fd=sys.stdin.fileno(); old=termios.tcgetattr(fd); tty.setraw(fd)\n"
                                          "os.write(1, b\"\\033[6n\\033[c\")\n") +
                                  restore + "'");
    REQUIRE_MESSAGE(r, show(r));
    check_clean_send(fx, session);
  }
  // printf's query in canonical mode, the shell's prompt right after it.
  auto printed = fx.send(session, R"(printf '\033[6n\033[c\033[>c')");
  REQUIRE_MESSAGE(printed, show(printed));
  check_clean_send(fx, session);

  // The prompt itself asks, at every prompt.
  auto ps1 = fx.send(session, R"(PS1='\[\033[6n\033[c\]q> ')");
  REQUIRE_MESSAGE(ps1, show(ps1));
  check_clean_send(fx, session);
  check_clean_send(fx, session, "FOURTH");
  auto plain = fx.send(session, "PS1='dsh> '");
  REQUIRE_MESSAGE(plain, show(plain));

  // A background job asks over and over while sends are typed and run.
  auto job = fx.send(session, R"((i=0; while [ $i -lt 400 ]; do printf '\033[6n\033[c'; sleep 0.005; i=$((i+1)); done) &)");
  REQUIRE_MESSAGE(job, show(job));
  for (int i = 0; i < 8; ++i) check_clean_send(fx, session, "LINE" + std::to_string(i));
  auto waited = fx.send(session, "wait");
  REQUIRE_MESSAGE(waited, show(waited));
  check_clean_send(fx, session);

  std::string history = history_of(fx, session, "bash");
  CHECK_MESSAGE(!holds_answer(history), history);
  CHECK(fx.close(session).ok());
}

TEST_CASE("vim under xterm gets its answers, quits cleanly, and nothing reaches the shell after it") {
  if (!on_path("vim")) {
    MESSAGE("skipped: vim is not installed");
    return;
  }
  TempDir dir;
  auto out = dir.path / "termresponse";
  ShellFixture fx;
  auto s = spawn_shell(fx, "bash");
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto& session = *s.session;
  auto vim = fx.send(session, request("vim -u NONE -N -n -i NONE", std::chrono::milliseconds(300), std::chrono::seconds(30)));
  REQUIRE_MESSAGE(vim, show(vim));
  REQUIRE_MESSAGE(vim->screen.has_value(), show(vim));
  // vim asked for the terminal's version (t_RV) at start: the answer is its v:termresponse.
  SendRequest save;
  save.text = ":call writefile([v:termresponse], '" + out.string() + "')";
  save.keys = {"Enter"};
  save.submit = false;
  save.idle = std::chrono::milliseconds(300);
  auto saved = fx.send(session, std::move(save));
  REQUIRE_MESSAGE(saved, show(saved));
  SendRequest quit;
  quit.text = ":q";
  auto quitted = fx.send(session, std::move(quit));
  REQUIRE_MESSAGE(quitted, show(quitted));
  CHECK_MESSAGE(quitted->exit_code == std::optional<int>(0), show(quitted));
  CHECK_MESSAGE(!quitted->screen.has_value(), show(quitted));  // back on the main screen
  std::ifstream in(out, std::ios::binary);
  std::string response((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_MESSAGE(response.find("[>0;100;0c") != std::string::npos, response);
  check_clean_send(fx, session);
  std::string history = history_of(fx, session, "bash");
  CHECK_MESSAGE(!holds_answer(history), history);
  CHECK(fx.close(session).ok());
}

TEST_CASE("remote: the same rule, by the far terminal's facts") {
  TempDir dir;
  auto poisoned = write_file(dir.path, "poisoned", std::string("before") + kQueries + "after\n");
  ShellFixture fx;
  RemoteConfig config;
  config.type = "pipe";
  config.transport = {shell::resolve_supervisor_path(""), "--stdio"};  // the far helper itself
  config.shell = fx.config();
  auto backend = make_remote_backend(fx.loop(), std::move(config));
  SpawnRequest request;
  request.options = {{"terminal", "xterm"}};
  auto s = fx.spawn_on(*backend, request);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto cat = fx.send(*s.session, "cat " + quoted(poisoned));
  REQUIRE_MESSAGE(cat, show(cat));
  check_clean_send(fx, *s.session);
  check_clean_send(fx, *s.session, "FOURTH");
  if (on_path("python3")) {
    auto cpr = fx.send(*s.session, raw_reader("\\033[6n", 'R'));
    REQUIRE_MESSAGE(cpr, show(cpr));
    auto at = cpr->viewport.rfind("got:");
    REQUIRE_MESSAGE(at != std::string::npos, show(cpr));
    CHECK_MESSAGE(cursor_report(cpr->viewport, at + 4), show(cpr));
  }
  std::string history = history_of(fx, *s.session, "bash");
  CHECK_MESSAGE(!holds_answer(history), history);
  CHECK(fx.close(*s.session).ok());
}
