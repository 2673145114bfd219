// A remote session end to end in one process: the host's stream channel, the far
// `dshpty-supervisor --stdio` as the transport itself (the thinnest pipe there is), real
// bash. The same promises as a local session: exact stdin_read, a result that is its own
// send's even right after a signal, exit status and cwd, hidden input, bounded floods, and
// every process gone when the close succeeds. (Over ssh: remote_e2e.py.)
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "dshpty/remote.hpp"
#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

RemoteConfig remote_config(const ShellFixture& fx) {
  RemoteConfig c;
  c.type = "pipe";
  c.transport = {shell::resolve_supervisor_path(""), "--stdio"};
  c.shell = fx.config();
  return c;
}

Spawned spawn_remote(ShellFixture& fx, RemoteConfig config, SpawnRequest request = {}) {
  auto backend = make_remote_backend(fx.loop(), std::move(config));
  return fx.spawn_on(*backend, std::move(request));
}

SendRequest send_of(std::string text, std::optional<std::chrono::milliseconds> idle = {}) {
  return test::request(std::move(text), idle, 60s);
}

Status deliver(ShellFixture& fx, BackendSession& session, Signal signal) {
  bool done = false;
  Status st = session.signal(signal, [&](Result<SignalResult>) { done = true; });
  if (st) run_until(fx.loop(), [&] { return done; });
  return st;
}

}  // namespace

TEST_CASE("remote: echo, read, python input(), exit status, cwd and hidden input") {
  ShellFixture fx;
  auto s = spawn_remote(fx, remote_config(fx));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(s.session->status().running());

  auto r = fx.send(*s.session, send_of("echo hi-$((6*7))"));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK(r->viewport.find("hi-42\n") != std::string::npos);
  CHECK(r->exit_code == 0);

  r = fx.send(*s.session, send_of("false"));
  CHECK_MESSAGE((r && r->exit_code == 1), show(r));

  r = fx.send(*s.session, send_of("cd /usr/share"));
  CHECK_MESSAGE((r && r->cwd == "/usr/share"), show(r));

  r = fx.send(*s.session, send_of("read x"));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_FALSE(r->exit_code);  // bash's `read` holds the terminal, not its prompt
  r = fx.send(*s.session, send_of("typed"));
  CHECK_MESSAGE((r && r->wait_reason == WaitReason::stdin_read && r->exit_code == 0), show(r));

  r = fx.send(*s.session, send_of("python3 -c 'print(\"got\", input(\"name? \"))'"));
  CHECK_MESSAGE((r && r->wait_reason == WaitReason::stdin_read && r->viewport.find("name? ") != std::string::npos), show(r));
  r = fx.send(*s.session, send_of("ada"));
  CHECK_MESSAGE((r && r->viewport.find("got ada") != std::string::npos && r->exit_code == 0), show(r));

  r = fx.send(*s.session, send_of("read -s -p 'Password: ' pw"));
  CHECK_MESSAGE((r && r->wait_reason == WaitReason::stdin_read && r->input_hidden), show(r));
  r = fx.send(*s.session, send_of("hunter2"));
  CHECK_MESSAGE((r && r->exit_code == 0), show(r));

  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("remote: signal then send at once, 15 rounds: every result is its own command's") {
  ShellFixture fx;
  auto s = spawn_remote(fx, remote_config(fx));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  for (int round = 0; round < 15; ++round) {
    CAPTURE(round);
    auto job = fx.send(*s.session, send_of("sleep 5", 300ms));
    REQUIRE_MESSAGE(job, show(job));
    CHECK_MESSAGE(job->wait_reason == WaitReason::inferred_idle, show(job));
    REQUIRE(deliver(fx, *s.session, Signal::sigint).ok());
    const std::string word = "tick-" + std::to_string(round);
    auto r = fx.send(*s.session, send_of("echo " + word, 10s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE((r->wait_reason == WaitReason::stdin_read && r->viewport.find(word + "\n") != std::string::npos),
                  show(r));
    CHECK(r->exit_code == 0);
  }
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("remote: a cancel at once stops the job; typed ahead waits for its own prompt") {
  ShellFixture fx;
  auto s = spawn_remote(fx, remote_config(fx));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  for (int round = 0; round < 5; ++round) {
    CAPTURE(round);
    bool done = false;
    Result<SendResult> r = make_error(Code::BACKEND_FAILED, "pending");
    auto op = s.session->start_send(send_of("echo started-long; sleep 60"), [&](Result<SendResult> res) {
      done = true;
      r = std::move(res);
    });
    REQUIRE(op);
    // Cancel the moment the job's first words arrive: the shell is forking the sleep then.
    std::string seen;
    REQUIRE(run_until(fx.loop(), [&] {
      seen += (*op)->read_output().text;
      return seen.find("started-long\n") != std::string::npos;
    }, 30s));
    (*op)->cancel();
    REQUIRE(run_until(fx.loop(), [&] { return done; }, 30s));
    auto status = fx.send(*s.session, send_of("echo status-$?", 10s));
    CHECK_MESSAGE((status && status->viewport.find("status-130") != std::string::npos), show(status));
  }
  // Type ahead while a job runs: the job's output is not the typed command's result.
  auto job = fx.send(*s.session, send_of("sleep 1; echo slept", 200ms));
  CHECK_MESSAGE((job && job->wait_reason == WaitReason::inferred_idle), show(job));
  auto ahead = fx.send(*s.session, send_of("echo after-$((1+1))", 10s));
  REQUIRE_MESSAGE(ahead, show(ahead));
  CHECK_MESSAGE((ahead->wait_reason == WaitReason::stdin_read && ahead->viewport.find("after-2\n") != std::string::npos &&
                 ahead->exit_code == 0),
                show(ahead));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("remote: escapes are killed at close; a destroyed session's tree goes too") {
  ShellFixture fx;
  auto s = spawn_remote(fx, remote_config(fx));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, send_of("sleep 1000 & setsid sleep 1001 & (nohup sleep 1002 >/dev/null 2>&1 &); echo spawned"));
  CHECK_MESSAGE((r && r->viewport.find("spawned") != std::string::npos), show(r));
  // The prompt may come before the detached subshell has exec'd its sleep.
  CHECK(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 3; }, 10s));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());

  auto t = spawn_remote(fx, remote_config(fx));
  REQUIRE_MESSAGE(t.session, describe(t.error));
  r = fx.send(*t.session, send_of("setsid sleep 1003 & echo spawned"));
  CHECK_MESSAGE((r && r->viewport.find("spawned") != std::string::npos), show(r));
  t.session.reset();  // no close: the link's end is the far helper's order to kill
  CHECK(run_until(fx.loop(), [&] { return marked_processes(fx.marker()).empty(); }, 5s));
}

TEST_CASE("remote: a flood is bounded and complete; resize and the screen follow") {
  ShellFixture fx;
  SpawnRequest req;
  req.options["terminal"] = "xterm";
  auto s = spawn_remote(fx, remote_config(fx), req);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, send_of("yes | head -c 30000000 | tail -c 20; echo flood-done"));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  r = fx.send(*s.session, send_of("seq 1 200000 | tail -1"));
  CHECK_MESSAGE((r && r->viewport.find("200000\n") != std::string::npos), show(r));
  r = fx.send(*s.session, send_of("seq 1 300000"));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->truncated);
  CHECK_MESSAGE(r->viewport.find("300000\n") != std::string::npos, wait_reason_name(r->wait_reason), " ",
                r->viewport.substr(r->viewport.size() - std::min<std::size_t>(200, r->viewport.size())));
  auto* sh = dynamic_cast<shell::ShellSession*>(s.session.get());
  REQUIRE(sh);
  CHECK(sh->text_memory_bytes() < 16u << 20);

  REQUIRE(s.session->resize(30, 100).ok());
  r = fx.send(*s.session, send_of("stty size"));
  CHECK_MESSAGE((r && r->viewport.find("30 100") != std::string::npos), show(r));
  auto screen = s.session->screen();
  REQUIRE(screen);
  CHECK(screen->rows == 30);
  CHECK(screen->cols == 100);
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("remote: a far shell that cannot start fails the spawn in the far side's words") {
  ShellFixture fx;
  RemoteConfig c = remote_config(fx);
  c.shell.argv = {"/nonexistent/bash"};
  auto s = spawn_remote(fx, c);
  REQUIRE_FALSE(s.session);
  CHECK_MESSAGE(describe(s.error).find("on the far side: cannot execute shell /nonexistent/bash") != std::string::npos,
                describe(s.error));
  // A path near a frame's size: its words are cut to fit a frame, never a broken frame.
  c.shell.argv = {"/nonexistent/" + std::string(60000, 'x')};
  s = spawn_remote(fx, c);
  REQUIRE_FALSE(s.session);
  CHECK(describe(s.error).find("on the far side: cannot execute shell /nonexistent/xxx") != std::string::npos);
  CHECK(describe(s.error).size() < 8192);
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("remote: vim draws on the alternate screen, takes keys and writes the file") {
  ShellFixture fx;
  SpawnRequest req;
  req.options = {{"terminal", "xterm"}, {"rows", "24"}, {"cols", "80"}};
  auto s = spawn_remote(fx, remote_config(fx), req);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  const std::string file = "/tmp/" + fx.marker() + "-vim.txt";
  auto started = fx.send(*s.session, test::request("vim -u NONE -N -n -i NONE " + file, 300ms, 30s));
  REQUIRE_MESSAGE(started, show(started));
  auto on_screen = [&](const std::string& text, bool alternate) {
    return run_until(fx.loop(), [&] {
      auto shot = s.session->screen();
      if (!shot || shot->alternate != alternate) return false;
      for (const auto& line : shot->lines) {
        if (line.find(text) != std::string::npos) return true;
      }
      return false;
    }, 30s);
  };
  REQUIRE(on_screen(fx.marker(), true));
  SendRequest keys;
  keys.text = "ihello over the pipe";
  keys.keys = {"Escape"};
  keys.submit = false;
  keys.idle = 200ms;
  auto typed = fx.send(*s.session, keys);
  REQUIRE_MESSAGE(typed, show(typed));
  REQUIRE(on_screen("hello over the pipe", true));
  auto quit = fx.send(*s.session, send_of(":wq"));
  REQUIRE_MESSAGE(quit, show(quit));
  CHECK_MESSAGE((quit->wait_reason == WaitReason::stdin_read && quit->exit_code == 0), show(quit));
  CHECK_FALSE(quit->screen);
  std::ifstream in(file);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == "hello over the pipe\n");
  std::remove(file.c_str());
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}
