// A result belongs to its send: interrupt and go on at once, type ahead while a job runs,
// answer a password prompt; each result holds its own command's output, exit status and
// working directory, and says when the reader hides its input. Real bash, real timing: no
// test waits for a "right moment" before the next send.
#include <doctest/doctest.h>
#include <ev.h>

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

// Every send here gets a generous deadline: completion must come from readiness.
SendRequest send_of(std::string text, std::optional<std::chrono::milliseconds> idle = {}) {
  return test::request(std::move(text), idle, 60s);
}

Status deliver(ShellFixture& fx, BackendSession& session, Signal signal) {
  bool done = false;
  Status st = session.signal(signal, [&](Result<SignalResult>) { done = true; });
  if (st) run_until(fx.loop(), [&] { return done; });
  return st;
}

// A running job's result: no exit status and no directory (the shell is not at its prompt).
void check_job_still_running(const Result<SendResult>& r) {
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::inferred_idle, show(r));
  CHECK_FALSE(r->exit_code);
  CHECK_FALSE(r->cwd);
  CHECK_FALSE(r->input_hidden);
}

}  // namespace

TEST_CASE("signal then send at once, 25 rounds: every result is its own command's") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  int misattributed = 0;
  for (int round = 0; round < 25; ++round) {
    CAPTURE(round);
    check_job_still_running(fx.send(*s.session, send_of("sleep 5", 300ms)));
    REQUIRE(deliver(fx, *s.session, Signal::sigint).ok());
    const std::string word = "tick-" + std::to_string(round);
    auto r = fx.send(*s.session, send_of("echo " + word, 10s));
    REQUIRE_MESSAGE(r, show(r));
    bool own = r->wait_reason == WaitReason::stdin_read &&
               r->viewport.find(word + "\n") != std::string::npos;
    if (!own) ++misattributed;
    CHECK_MESSAGE(own, show(r));
    CHECK(r->exit_code == 0);
  }
  CHECK(misattributed == 0);
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("cancel then send at once, 25 rounds: every result is its own command's") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  for (int round = 0; round < 25; ++round) {
    CAPTURE(round);
    bool done = false;
    Result<SendResult> cancelled = make_error(Code::BACKEND_FAILED, "pending");
    auto op = s.session->start_send(send_of("sleep 5", 30s), [&](Result<SendResult> r) {
      done = true;
      cancelled = std::move(r);
    });
    REQUIRE(op);
    // As soon as the command is typed (not once it runs): cancel, then send.
    REQUIRE(run_until(fx.loop(), [&] {
      auto* shell_op = dynamic_cast<shell::ShellSendOperation*>(op->get());
      return shell_op && shell_op->write_landed();
    }));
    CHECK((*op)->cancel());
    REQUIRE(run_until(fx.loop(), [&] { return done; }));
    REQUIRE_MESSAGE(cancelled, show(cancelled));
    const std::string word = "tock-" + std::to_string(round);
    auto r = fx.send(*s.session, send_of("echo " + word, 10s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
    CHECK_MESSAGE(r->viewport.find(word + "\n") != std::string::npos, show(r));
  }
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("python: KeyboardInterrupt, then the next expression is evaluated and answered") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, send_of("python3 -q", 10s));
  REQUIRE_MESSAGE(r, show(r));
  REQUIRE_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_FALSE(r->exit_code);  // python's prompt, not the shell's
  r = fx.send(*s.session, send_of("import time; time.sleep(5)", 300ms));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::inferred_idle);
  REQUIRE(deliver(fx, *s.session, Signal::sigint).ok());
  r = fx.send(*s.session, send_of("6*7", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->viewport.find("42\n") != std::string::npos, show(r));
  // The signal's traceback arrived after the last result: this result shows it first (one
  // shown-output cursor per session), then its own line.
  const auto interrupt = r->viewport.find("KeyboardInterrupt");
  if (interrupt != std::string::npos) CHECK(interrupt < r->viewport.find("42\n"));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("type-ahead: text sent while a job runs completes on the prompt after it ran") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  for (int round = 0; round < 10; ++round) {
    CAPTURE(round);
    check_job_still_running(fx.send(*s.session, send_of("sleep 1", 200ms)));
    const std::string word = "ahead-" + std::to_string(round);
    auto r = fx.send(*s.session, send_of("echo " + word, 10s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
    CHECK_MESSAGE(r->viewport.find(word + "\n") != std::string::npos, show(r));
    CHECK(r->exit_code == 0);
  }
  // Two reads answered by two sends.
  auto r = fx.send(*s.session, send_of(R"(read a; read b; echo "$a-$b")", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  r = fx.send(*s.session, send_of("one", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_FALSE(r->exit_code);  // `read b` is reading, the shell is not at its prompt
  r = fx.send(*s.session, send_of("two", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("one-two\n") != std::string::npos, show(r));
  CHECK(r->exit_code == 0);
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a resize right before a send: readline's repaint of its prompt is not the send's prompt") {
  // bash's prompt marks come from PS1, and readline repaints the expanded prompt on a
  // resize: the repaint carries the old prompt's count, which is no new prompt.
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  for (int round = 0; round < 20; ++round) {
    CAPTURE(round);
    REQUIRE(s.shell()->resize(30 + round % 2, 100 + round).ok());
    const std::string word = "resized-" + std::to_string(round);
    auto r = fx.send(*s.session, send_of("sleep 0.05; echo " + word, 10s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
    CHECK_MESSAGE(r->viewport.find(word + "\n") != std::string::npos, show(r));
    CHECK(r->exit_code == 0);
  }
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("exit status and working directory when the send ends at the shell's prompt") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  for (auto [command, status] : {std::pair{"true", 0}, std::pair{"false", 1},
                                 std::pair{"(exit 7)", 7}}) {
    CAPTURE(command);
    auto r = fx.send(*s.session, send_of(command, 10s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK(r->wait_reason == WaitReason::stdin_read);
    CHECK_MESSAGE(r->exit_code == status, show(r));
    CHECK(r->cwd.has_value());
  }
  auto r = fx.send(*s.session, send_of("cd /usr/share", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->cwd == std::string("/usr/share"), show(r));
  CHECK(r->exit_code == 0);
  check_job_still_running(fx.send(*s.session, send_of("sleep 2", 200ms)));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("password prompts are flagged input_hidden; the secret is never shown") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  const std::string secret = "s3cr3t-7Qx";

  auto r = fx.send(*s.session, send_of("python3 -c 'import getpass; print(len(getpass.getpass()))'", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->input_hidden, show(r));
  r = fx.send(*s.session, send_of(secret, 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find(std::to_string(secret.size()) + "\n") != std::string::npos, show(r));
  CHECK(r->viewport.find(secret) == std::string::npos);
  CHECK_FALSE(r->input_hidden);  // back at the shell's prompt

  r = fx.send(*s.session, send_of(R"(read -s -p "Password: " pw; echo "got ${#pw}")", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->input_hidden, show(r));
  r = fx.send(*s.session, send_of(secret, 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("got " + std::to_string(secret.size())) != std::string::npos, show(r));
  CHECK(r->viewport.find(secret) == std::string::npos);

  // An ordinary prompt is not flagged.
  r = fx.send(*s.session, send_of(R"(read -p "Name: " name; echo "hi $name")", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_FALSE(r->input_hidden);
  r = fx.send(*s.session, send_of("ada", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->viewport.find("hi ada") != std::string::npos);

  auto page = s.session->read({0, 10'000});
  REQUIRE(page);
  CHECK(page->text.find(secret) == std::string::npos);
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("carriage returns as a terminal shows them: in the viewport and the scrollback") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, send_of(R"(printf 'abc\rX\n')", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("\nXbc\n") != std::string::npos, show(r));
  r = fx.send(*s.session,
              send_of(R"(for i in $(seq 1 300); do printf '\rworking %d/300' $i; done; printf '\r\033[Kdone\n')", 10s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("\ndone\n") != std::string::npos, show(r));
  CHECK_MESSAGE(r->viewport.find("working 1/300") == std::string::npos, show(r));  // the frames are gone
  CHECK_MESSAGE(r->viewport.find("working 300/300") == std::string::npos, show(r));
  auto page = s.session->read({0, 10'000});
  REQUIRE(page);
  CHECK(page->text.find("working 2/300") == std::string::npos);
  CHECK(page->text.find("\nXbc\n") != std::string::npos);
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string_view::npos; start = nl + 1)
    lines.emplace_back(text.substr(start, nl - start));
  lines.emplace_back(text.substr(start));
  for (std::string& line : lines) line.erase(line.find_last_not_of(' ') + 1);
  return lines;
}

// From the first line that starts with `first` to the end, the cursor's empty row dropped.
std::vector<std::string> from(std::vector<std::string> lines, std::string_view first) {
  auto at = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.starts_with(first); });
  lines.erase(lines.begin(), at);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

}  // namespace

// `read -s -p 'Password: '` answered leaves the prompt after the password prompt, on its
// row; in a single-byte locale readline then clears to what it takes for the line's end
// with blanks that reach the margin and wrap, and comes back with a return (160 columns)
// or backspaces (40). The text must read as the rows the screen shows, not as the prompt
// written over `Passw`.
TEST_CASE("after a password prompt, the text reads as the screen's rows, in any locale and width") {
  for (std::string locale : {"C", "C.UTF-8"}) {
    for (unsigned cols : {160u, 40u}) {
      CAPTURE(locale);
      CAPTURE(cols);
      ShellFixture fx;
      ShellConfig config = fx.config();
      config.env["LC_ALL"] = locale;
      config.env["LANG"] = std::nullopt;
      auto s = fx.spawn(config);
      REQUIRE_MESSAGE(s.session, describe(s.error));
      REQUIRE(s.session->resize(40, cols).ok());
      auto r = fx.send(*s.session, send_of("read -s -p 'Password: ' pw", 10s));
      REQUIRE_MESSAGE(r, show(r));
      CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
      CHECK(r->input_hidden);
      r = fx.send(*s.session, send_of("hunter2", 10s));
      REQUIRE_MESSAGE(r, show(r));
      CHECK_MESSAGE(r->viewport.find("ord:") == std::string::npos, show(r));
      CHECK_MESSAGE(r->viewport.find("hunter2") == std::string::npos, show(r));
      r = fx.send(*s.session, send_of("echo got ${#pw}", 10s));
      REQUIRE_MESSAGE(r, show(r));
      CHECK_MESSAGE(r->viewport == "echo got ${#pw}\ngot 7\ndsh> ", show(r));
      auto page = s.session->read({0, 10'000});
      REQUIRE(page);
      auto shot = s.session->screen();
      REQUIRE(shot);
      const auto text_rows = from(lines_of(page->text), "Password:");
      const auto screen_rows = from(shot->lines, "Password:");
      REQUIRE(text_rows.size() >= 3);
      CHECK(text_rows.front().starts_with("Password: dsh>"));
      CHECK(text_rows == screen_rows);
      CHECK(fx.close(*s.session).ok());
    }
  }
}

TEST_CASE("a signal the shell ignores at its prompt holds no send back") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // An interactive bash ignores SIGTERM and SIGTSTP. Were the next send gated, it would
  // wait for its idle time (30 s) and its 5 s deadline would end it first.
  for (Signal signal : {Signal::sigterm, Signal::sigtstp}) {
    CAPTURE(signal_name(signal));
    REQUIRE(deliver(fx, *s.session, signal).ok());
    auto r = fx.send(*s.session, test::request("echo still-here", 30s, 5s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
    CHECK(r->viewport.find("still-here\n") != std::string::npos);
  }
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

// The moment after the write, the shell is still reading the line, forking the job, or
// handing it the terminal: a signal sent then to the shell's own group would be the shell's
// (bash takes SIGINT while it starts a job, and the job runs on). The signal must reach the
// job all the same: interrupted at once, every round (or, for a cancel as the write lands,
// the line taken back before the shell read it: then nothing of it ran).
TEST_CASE("a signal or a cancel right after the write, or right after the echo, interrupts the job") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  for (int round = 0; round < 60; ++round) {
    CAPTURE(round);
    const bool by_cancel = round % 2 == 1;
    // Rounds 0, 1 mod 4: the moment the write lands (the shell reads the line). Rounds 2, 3:
    // the moment the echo's output arrives (the shell is forking the sleep).
    const bool after_echo = round % 4 >= 2;
    bool done = false;
    Result<SendResult> interrupted = make_error(Code::BACKEND_FAILED, "pending");
    // A compound line: the shell runs the echo itself, then forks the sleep.
    auto op = s.session->start_send(send_of("echo start-" + std::to_string(round) + "; sleep 30", 60s),
                                    [&](Result<SendResult> r) {
                                      done = true;
                                      interrupted = std::move(r);
                                    });
    REQUIRE(op);
    REQUIRE(run_until(fx.loop(), [&] {
      auto* shell_op = dynamic_cast<shell::ShellSendOperation*>(op->get());
      return shell_op && shell_op->write_landed();
    }));
    if (after_echo) {
      std::string seen;
      const bool echoed = run_until(fx.loop(), [&] {
        seen += (*op)->read_output().text;
        return seen.find("\nstart-" + std::to_string(round) + "\n") != std::string::npos;
      });
      REQUIRE_MESSAGE(echoed, "the send's output so far: " << seen << " | done: " << done
                      << " | " << show(interrupted));
    }
    if (by_cancel) {
      CHECK((*op)->cancel());
    } else {
      bool signalled = false;
      REQUIRE(s.session->signal(Signal::sigint, [&](Result<SignalResult> r) {
        signalled = true;
        CHECK_MESSAGE(r, describe(r ? Error() : r.error()));
      }).ok());
      REQUIRE(run_until(fx.loop(), [&] { return signalled; }));
    }
    REQUIRE(run_until(fx.loop(), [&] { return done; }, 90s));
    REQUIRE_MESSAGE(interrupted, show(interrupted));
    CHECK_MESSAGE(interrupted->wait_reason == WaitReason::stdin_read, show(interrupted));
    if (interrupted->taken_back_bytes > 0) {
      // A cancel as the write lands may find the line still unread: it takes it back, and
      // nothing of it ran (no echo's output, no sleep; the status is the previous line's).
      CHECK(by_cancel);
      CHECK_FALSE(after_echo);
      CHECK_MESSAGE(interrupted->viewport.find("start-" + std::to_string(round)) == std::string::npos,
                    show(interrupted));
      CHECK(marked_processes_named(fx.marker(), "sleep").empty());
    } else {
      CHECK_MESSAGE(interrupted->exit_code == 130, show(interrupted));
    }
  }
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

// The worst moment for a cancel: just after the write landed, while the shell may be taking
// the line. Either the line is taken back (nothing of it ran: no file, no output) or it is
// the send's own command that is interrupted (status 130): never "cancelled" with the command
// run to its end. The cancel comes after 0 to ~4 ms of the loop's own turns, spread over the
// rounds, since the shell's read of the line may fall anywhere in that span.
// The hardest moments: the line's first command (`touch`) has just exited, or is exiting
// (still running in /proc, the signal dropped), and the shell has not yet taken the
// terminal back, so its group is still in front: a SIGINT to it does nothing, and the
// cancel must reach the list's next command (ProcessChannel::signal_fate). And the shell
// asleep in read() while the line is taken back: every byte is taken back or read by it,
// none dropped uncounted (a cancel then waited out its hold for a C that never came).
// Measured before: 3 to 4 of 400 ran to their end at bash; at zsh 5 of 300 (the take-back
// already fixed).
namespace {

// Rounds of the worst-moment cancel: DSHPTY_CANCEL_ROUNDS overrides the suite's count (a
// longer hunt by hand: 400 and more).
int cancel_rounds(int suite_rounds) {
  const char* env = std::getenv("DSHPTY_CANCEL_ROUNDS");
  return env && std::atoi(env) > 0 ? std::atoi(env) : suite_rounds;
}

bool on_path(const char* program) {
  const std::string command = std::string("command -v ") + program + " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

void cancel_just_after_the_write(const std::string& shell, int rounds) {
  ShellFixture fx;
  SpawnRequest request;
  request.options = {{"shell", shell}};
  auto s = fx.spawn(fx.config(), request);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  std::string dir_template = std::filesystem::temp_directory_path() / "dshpty-cancel-XXXXXX";
  REQUIRE(::mkdtemp(dir_template.data()));
  const std::string dir = dir_template;
  int ran_through = 0;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    const std::string file = dir + "/ran-" + std::to_string(round);
    bool done = false;
    Result<SendResult> result = make_error(Code::BACKEND_FAILED, "pending");
    auto op = s.session->start_send(send_of("touch " + file + "; sleep 0.3; echo EXIT-OK", 60s),
                                    [&](Result<SendResult> r) {
                                      done = true;
                                      result = std::move(r);
                                    });
    REQUIRE(op);
    REQUIRE(run_until(fx.loop(), [&] {
      auto* shell_op = dynamic_cast<shell::ShellSendOperation*>(op->get());
      return shell_op && shell_op->write_landed();
    }));
    // The loop's own turns, not a sleep: output that comes meanwhile is read as it would be.
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50 * (round % 80));
    while (!done && std::chrono::steady_clock::now() < until) ev_run(fx.loop(), EVRUN_NOWAIT);
    if (!done) CHECK((*op)->cancel());
    REQUIRE(run_until(fx.loop(), [&] { return done; }, 90s));
    REQUIRE_MESSAGE(result, show(result));
    // A line taken back reports the status the prompt had (the previous command's).
    const bool ran = result->viewport.find("\nEXIT-OK\n") != std::string::npos ||
                     (result->taken_back_bytes == 0 && result->exit_code == 0);
    if (ran) ++ran_through;
    CHECK_MESSAGE(!ran, show(result));
    if (result->taken_back_bytes > 0) {
      CHECK_MESSAGE(!std::filesystem::exists(file), show(result));
    } else {
      CHECK_MESSAGE(result->exit_code == 130, show(result));
    }
  }
  CHECK(ran_through == 0);
  std::filesystem::remove_all(dir);
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

}  // namespace

TEST_CASE("a cancel just after the write lands takes the line back or interrupts it, every round (bash)") {
  cancel_just_after_the_write("bash", cancel_rounds(80));
}

TEST_CASE("a cancel just after the write lands takes the line back or interrupts it, every round (zsh)") {
  if (!on_path("zsh")) {
    MESSAGE("skipped: zsh is not installed");
    return;
  }
  cancel_just_after_the_write("zsh", cancel_rounds(80));
}

// A cancel whose SIGINT reaches the line's first command inside its exit (it drops the
// signal, /proc still says it runs: a process preempted in exit_group() on a loaded
// machine) must reach the list's next command. The fixture holds that window open with
// ptrace. Seen once in CI before: the second look took the still-running command for one
// that had taken the signal, and the list ran to its end.
namespace {

void cancel_at_a_command_inside_its_exit(const std::string& shell) {
  ShellFixture fx;
  SpawnRequest request;
  request.options = {{"shell", shell}};
  auto s = fx.spawn(fx.config(), request);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  bool done = false;
  Result<SendResult> result = make_error(Code::BACKEND_FAILED, "pending");
  auto op = s.session->start_send(
      send_of("/usr/bin/python3 " DSHPTY_TEST_FIXTURES "/exit_held.py; sleep 5; echo EXIT-OK", 60s),
      [&](Result<SendResult> r) {
        done = true;
        result = std::move(r);
      });
  REQUIRE(op);
  std::string seen;
  REQUIRE(run_until(fx.loop(), [&] {
    seen += (*op)->read_output().text;
    return done || seen.find("PARENT-HELD") != std::string::npos || seen.find("PTRACE-REFUSED") != std::string::npos;
  }, 30s));
  if (seen.find("PTRACE-REFUSED") != std::string::npos) {
    MESSAGE("skipped: ptrace is not allowed here, and the fixture needs it to hold a command inside its exit");
    REQUIRE(run_until(fx.loop(), [&] { return done; }, 30s));
    CHECK(fx.close(*s.session).ok());
    return;
  }
  REQUIRE_MESSAGE(!done, show(result));
  CHECK((*op)->cancel());
  REQUIRE(run_until(fx.loop(), [&] { return done; }, 30s));
  REQUIRE_MESSAGE(result, show(result));
  CHECK_MESSAGE(result->viewport.find("\nEXIT-OK\n") == std::string::npos, show(result));
  CHECK_MESSAGE(result->exit_code == 130, show(result));
  CHECK(marked_processes_named(fx.marker(), "sleep").empty());
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

}  // namespace

TEST_CASE("a cancel that meets the line's command inside its exit goes to the next command (bash)") {
  cancel_at_a_command_inside_its_exit("bash");
}

TEST_CASE("a cancel that meets the line's command inside its exit goes to the next command (zsh)") {
  if (!on_path("zsh")) {
    MESSAGE("skipped: zsh is not installed");
    return;
  }
  cancel_at_a_command_inside_its_exit("zsh");
}
