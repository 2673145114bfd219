// Sends against real bash: they complete for the right reason, output is
// bounded, and text survives chunking.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto pos = hay.find(needle); pos != std::string_view::npos; pos = hay.find(needle, pos + needle.size())) ++n;
  return n;
}

struct ScopedEnv {
  std::vector<std::string> names;
  void set(const std::string& name, const std::string& value) {
    ::setenv(name.c_str(), value.c_str(), 1);
    names.push_back(name);
  }
  ~ScopedEnv() {
    for (const auto& n : names) ::unsetenv(n.c_str());
  }
};

// This process's resident set in KiB (VmRSS), for the bench-style print; 0 when unreadable.
long rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

}  // namespace

TEST_CASE("cwd and exported variables persist across sends; host secrets are absent") {
  ScopedEnv env;
  env.set("DSH_TEST_SECRET", "s1");
  env.set("MY_API_KEY", "s2");
  env.set("GITHUB_TOKEN", "s3");
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, "cd /tmp");
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::stdin_read);
  r = fx.send(*s.session, "export DSHPTY_PERSIST=kept-value");
  REQUIRE_MESSAGE(r, show(r));
  r = fx.send(*s.session, "pwd; echo \"[$DSHPTY_PERSIST]\"");
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::stdin_read);
  CHECK_MESSAGE(r->viewport.find("\n/tmp\n") != std::string::npos, show(r));
  CHECK_MESSAGE(r->viewport.find("[kept-value]") != std::string::npos, show(r));

  r = fx.send(*s.session,
              "echo \"<${DSH_TEST_SECRET-unset}|${MY_API_KEY-unset}|${GITHUB_TOKEN-unset}>\"");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("<unset|unset|unset>") != std::string::npos, show(r));
  r = fx.send(*s.session, "echo \"<$TERM|$PAGER|$GIT_PAGER|${DSH_PTY_SESSION_ID:+id}>\"");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("<dumb|cat|cat|id>") != std::string::npos, show(r));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("echo, read, python input() and cat complete as stdin_read") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, "echo hello");
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::stdin_read);
  CHECK_MESSAGE(r->viewport.find("hello\n") != std::string::npos, show(r));
  CHECK(r->session_status.running());

  // With a 30 s idle, only stdin evidence can complete these.
  for (const char* reader : {"read x", "python3 -c 'input()'", "cat"}) {
    CAPTURE(reader);
    r = fx.send(*s.session, request(reader, 30s, 60s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
    // Feed the reader a line (cat needs its EOF too) and get the prompt back.
    r = fx.send(*s.session, request("line", 30s, 60s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK(r->wait_reason == WaitReason::stdin_read);
    if (std::string_view(reader) == "cat") {
      SendRequest eof;
      eof.text = "\x04";
      eof.submit = false;
      eof.idle = 30s;
      r = fx.send(*s.session, eof);
      REQUIRE_MESSAGE(r, show(r));
      CHECK(r->wait_reason == WaitReason::stdin_read);
    }
  }
  r = fx.send(*s.session, "echo back");
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->viewport.find("back\n") != std::string::npos);

  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a line over the canonical limit is refused while a program reads lines, typed at the prompt") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  char dir[] = "/tmp/dshpty-canon-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string file = std::string(dir) + "/f";
  struct Removed {  // on a failed REQUIRE too
    std::string file, dir;
    ~Removed() {
      std::remove(file.c_str());
      ::rmdir(dir.c_str());
    }
  } removed{file, dir};
  // cat reads in canonical mode: the kernel would keep 4095 bytes of the line and drop the rest.
  auto r = fx.send(*s.session, request("cat > " + file, 30s, 60s));
  REQUIRE_MESSAGE(r, show(r));
  REQUIRE(r->wait_reason == WaitReason::stdin_read);
  r = fx.send(*s.session, request("short\n" + std::string(5000, 'x'), 30s, 60s));
  REQUIRE_FALSE(r);
  CHECK(r.error()->code == Code::INVALID_ARGUMENT);
  CHECK_MESSAGE(r.error()->message.find("line 2 of the text is 5000 bytes") != std::string::npos, r.error()->message);
  CHECK(r.error()->message.find("4095") != std::string::npos);
  // A line at the limit goes in whole; nothing of the refused send was typed.
  r = fx.send(*s.session, request(std::string(4095, 'y'), 30s, 60s));
  REQUIRE_MESSAGE(r, show(r));
  SendRequest eof;
  eof.text = "\x04";
  eof.submit = false;
  eof.idle = 30s;
  r = fx.send(*s.session, eof);
  REQUIRE_MESSAGE(r, show(r));
  std::ifstream in(file);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content == std::string(4095, 'y') + "\n");
  // At bash's prompt readline reads raw: a 5000-byte command line runs.
  r = fx.send(*s.session, request("echo " + std::string(5000, 'z') + " | wc -c", 30s, 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("5001\n") != std::string::npos, show(r));
  CHECK(fx.close(*s.session).ok());
}

TEST_CASE("a send's viewport ends at the prompt as it reads, in the C locale too") {
  // readline in a single-byte locale clears the rest of a dumb terminal's line after each
  // prompt with blanks and as many backspaces (no erase-in-line to use): a screen width of
  // them, which are not text.
  ShellFixture fx;
  ShellConfig config = fx.config();
  config.env["LC_ALL"] = "C";
  config.env["LANG"] = std::nullopt;
  auto s = fx.spawn(config);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  for (const char* word : {"first", "second", "third"}) {
    auto r = fx.send(*s.session, std::string("echo ") + word);
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(r->viewport == std::string("echo ") + word + "\n" + word + "\ndsh> ", show(r));
  }
  CHECK(fx.close(*s.session).ok());
}

TEST_CASE("inferred_idle, timeout and session_exit; a send after exit fails SESSION_EXITED") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, request("sleep 5", 300ms));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::inferred_idle);
  bool signalled = false;
  REQUIRE(s.session->signal(Signal::sigint, [&](Result<SignalResult>) { signalled = true; }).ok());
  REQUIRE(run_until(fx.loop(), [&] { return signalled; }));

  // The loop runs in a child shell: an interactive bash running the loop itself keeps going
  // when SIGINT lands between two sleeps (it takes the signal as handled by the child).
  r = fx.send(*s.session, request("sh -c 'while :; do echo tick; sleep 0.1; done'", 30s, 1s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::timeout);
  signalled = false;
  REQUIRE(s.session->signal(Signal::sigint, [&](Result<SignalResult>) { signalled = true; }).ok());
  REQUIRE(run_until(fx.loop(), [&] { return signalled; }));

  r = fx.send(*s.session, request("exit 7", 30s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::session_exit);
  CHECK(r->session_status == SessionStatus::exited_with_code(7));
  auto after = s.session->start_send(request("echo no"), [](Result<SendResult>) {
    FAIL("a refused send must not complete");
  });
  REQUIRE_FALSE(after);
  CHECK(after.error()->code == Code::SESSION_EXITED);
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("cancel delivers a real SIGINT; before the write landed it writes nothing") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));

  // sleep 60, cancelled once it runs: the prompt comes back, so stdin_read.
  bool done = false;
  Result<SendResult> r = make_error(Code::BACKEND_FAILED, "pending");
  auto op = s.session->start_send(request("sleep 60", 30s, 90s), [&](Result<SendResult> res) {
    done = true;
    r = std::move(res);
  });
  REQUIRE(op);
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 1; }));
  pid_t sleeper = marked_processes_named(fx.marker(), "sleep").front();
  REQUIRE(run_until(fx.loop(), [&] { return foreground_pgid(*s.session->pid()) == sleeper; }));
  CHECK((*op)->cancel());
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::stdin_read);
  CHECK(marked_processes_named(fx.marker(), "sleep").empty());
  CHECK_FALSE((*op)->cancel());  // settled
  op->reset();

  // A raw-mode python with ISIG off: a typed ^C would be just a byte; the signal is real.
  auto py = fx.send(*s.session, request(
      "python3 -c 'import sys, termios, tty; tty.setraw(0); sys.stdin.read(1)'",
      30s, 60s));
  REQUIRE_MESSAGE(py, show(py));
  CHECK(py->wait_reason == WaitReason::stdin_read);  // the probe saw it block in read(0)
  done = false;
  SendRequest nothing;
  nothing.submit = false;  // writes no byte: only the cancel acts
  nothing.idle = 30s;
  op = s.session->start_send(nothing, [&](Result<SendResult> res) {
    done = true;
    r = std::move(res);
  });
  REQUIRE(op);
  auto* shell_op = dynamic_cast<shell::ShellSendOperation*>(op->get());
  REQUIRE(shell_op);
  REQUIRE(run_until(fx.loop(), [&] { return shell_op->write_landed(); }));
  CHECK((*op)->cancel());
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::stdin_read);
  CHECK_MESSAGE(r->viewport.find("KeyboardInterrupt") != std::string::npos, show(r));
  op->reset();

  // Cancelled before the loop ran the write: the text never reaches the shell, and the
  // send costs nothing: it is answered as a check-in is, at once at the prompt (a long idle
  // time would show as inferred_idle).
  done = false;
  op = s.session->start_send(request("echo CANCELLED-BEFORE-WRITE", 30s),
                             [&](Result<SendResult> res) {
                               done = true;
                               r = std::move(res);
                             });
  REQUIRE(op);
  CHECK((*op)->cancel());
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->viewport.empty(), show(r));
  auto page = s.session->read({});
  REQUIRE(page);
  CHECK(page->text.find("CANCELLED-BEFORE-WRITE") == std::string::npos);
  op->reset();
  auto after = fx.send(*s.session, "echo still-here");
  REQUIRE_MESSAGE(after, show(after));
  CHECK(after->viewport.find("still-here\n") != std::string::npos);
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a nested shell's marker, printed while it holds the terminal, is not stdin_read") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, request(
      R"(bash --norc --noprofile -i -c "printf '\033]133;D;0\007dsh> '; sleep 3")", 500ms, 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::inferred_idle, show(r));
  CHECK(r->viewport.find("dsh> ") != std::string::npos);  // the fake prompt did arrive
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("yes | head -c 50000000 stays under the caps and truncates the viewport") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  ShellConfig defaults;
  std::unique_ptr<BackendSendOperation> op;
  auto r = fx.send(*s.session, request("yes | head -c 50000000", 20s, 300s), &op, 320s);
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::stdin_read);
  CHECK(r->truncated);
  CHECK(r->viewport.size() <= defaults.viewport_bytes);
  CHECK(s.shell()->retained_bytes() <= defaults.scrollback_bytes);
  CHECK(s.shell()->text_memory_bytes() <=
        defaults.scrollback_bytes + defaults.viewport_bytes +
            (defaults.scrollback_lines + 1024) * sizeof(std::uint64_t));
  auto delta = op->read_output();
  CHECK(delta.truncated);
  CHECK(delta.text.size() <= defaults.viewport_bytes);
  auto page = s.session->read({});
  REQUIRE(page);
  CHECK(page->total_lines <= static_cast<std::int64_t>(defaults.scrollback_lines));
  op.reset();
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a multi-byte character split across reads comes out intact") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // 50,000 euro signs (3 bytes each): reads of a few KiB must split some of them. The
  // command line itself spells the sign in octal, so only the output holds it.
  auto r = fx.send(*s.session, R"(printf '\342\202\254%.0s' {1..50000}; echo)");
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::stdin_read);
  CHECK(count(r->viewport, "\u20ac") == 50000);
  CHECK(r->viewport.find("\ufffd") == std::string::npos);
  auto page = s.session->read({});
  REQUIRE(page);
  CHECK(count(page->text, "\u20ac") == 50000);
  CHECK(page->text.find("\ufffd") == std::string::npos);
  CHECK(fx.close(*s.session).ok());
}

TEST_CASE("input a program does not read is bounded: a send past the bound is refused, nothing held") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, request("sleep 100", 300ms));
  REQUIRE_MESSAGE(r, show(r));
  REQUIRE(r->wait_reason == WaitReason::inferred_idle);

  // Whole lines, so the terminal's line discipline keeps them (an overlong canonical line
  // would be dropped by the kernel instead) until its buffers fill and writes wait.
  std::string lines;
  while (lines.size() < 900 * 1000) lines += std::string(99, 'x') + "\n";
  r = fx.send(*s.session, request(lines, 300ms));
  REQUIRE_MESSAGE(r, show(r));
  const std::uint64_t pending = s.shell()->pending_input_bytes();
  CHECK(pending > 512 * 1024);  // the kernel took a few buffers' worth; the rest waits here
  CHECK(pending <= shell::ShellSession::kMaxPendingInputBytes);

  const long rss_before = rss_kib();
  for (int i = 0; i < 10; ++i) {
    auto refused = s.session->start_send(request(lines, 300ms), [](Result<SendResult>) {
      FAIL("a refused send must not complete");
    });
    REQUIRE_FALSE(refused);
    CHECK(refused.error()->code == Code::INVALID_ARGUMENT);
    CHECK_MESSAGE(refused.error()->message.find("bound of 1048576 bytes of pending input") != std::string::npos,
                  refused.error()->message);
  }
  auto raw = s.shell()->write(lines);
  REQUIRE_FALSE(raw);
  CHECK(raw.error()->code == Code::INVALID_ARGUMENT);
  CHECK(s.shell()->pending_input_bytes() == pending);
  std::printf("pending input: %llu bytes held; RSS %ld KiB before and %ld KiB after 10 refused sends of %zu bytes\n",
              static_cast<unsigned long long>(pending), rss_before, rss_kib(), lines.size());

  // What fits under the bound still goes: a check-in, and a small send (it queues behind).
  r = fx.send(*s.session, SendRequest{});
  REQUIRE_MESSAGE(r, show(r));
  r = fx.send(*s.session, request("echo small", 300ms));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}
