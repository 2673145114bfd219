// How sends settle on programs that keep the terminal busy without wanting input, or wait
// for input in short polls (docs/shell-backend.md, "Send readiness"): a screen that only
// redraws (watch, a counter on one row) settles inferred_idle after its idle time of
// redraws, not at the deadline, while output that grows the screen keeps a send going; a
// short poll of the terminal alone (ipython, an idle select loop) is a reader once it woke
// and did nothing, while a loop that prints on each wake stays a relay.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

// The program's path on PATH, or "" when absent.
std::string which(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t at = 0; at <= dirs.size();) {
    std::size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(at, end - at) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    at = end + 1;
  }
  return {};
}

// Ctrl-C as a key, then a send that must end at the shell's prompt.
void interrupt_and_expect_prompt(ShellFixture& fx, BackendSession& session) {
  SendRequest ctrl_c;
  ctrl_c.keys = {"C-c"};
  ctrl_c.submit = false;
  ctrl_c.idle = 10s;
  auto r = fx.send(session, std::move(ctrl_c));
  REQUIRE_MESSAGE(r, show(r));
  r = fx.send(session, request("echo BACK-$((6*7))", 10s, 30s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->viewport.find("BACK-42") != std::string::npos, show(r));
}

}  // namespace

TEST_CASE("a screen that only redraws settles inferred_idle after its idle time, not at the deadline") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));

  // A counter redrawn on one row with \r, forever: nothing but redraws after the first.
  auto r = fx.send(*s.session,
                   request("i=0; while :; do i=$((i+1)); printf '\\rcount %d ' $i; sleep 0.1; done", 1500ms, 30s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::inferred_idle, show(r));
  CHECK_MESSAGE(r->viewport.find("count ") != std::string::npos, show(r));
  // A check-in while it redraws on waits as a send does, and settles the same way.
  SendRequest check_in;
  check_in.idle = 1500ms;
  check_in.timeout = 30s;
  r = fx.send(*s.session, std::move(check_in));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::inferred_idle, show(r));
  interrupt_and_expect_prompt(fx, *s.session);

  if (std::string watch = which("watch"); !watch.empty()) {
    r = fx.send(*s.session, request("watch -n 0.5 date", 1500ms, 30s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(r->wait_reason == WaitReason::inferred_idle, show(r));
    interrupt_and_expect_prompt(fx, *s.session);
  } else {
    MESSAGE("no watch on PATH: its case skipped");
  }
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("output that grows the screen keeps a send going: progress on one row, then new lines") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // Each phase is shorter than the idle time, so only growth between them matters: lines
  // printed, a progress row redrawn, then lines again, to the end at the shell's prompt.
  auto r = fx.send(*s.session,
                   request("for i in 1 2 3 4 5 6 7 8; do echo line-$i; sleep 0.2; done; "
                           "for p in 10 20 30 40 50; do printf '\\r%d%%' $p; sleep 0.2; done; echo; "
                           "for i in 1 2 3 4 5 6 7 8; do echo more-$i; sleep 0.2; done; echo END-$((6*7))",
                           1500ms, 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->viewport.find("END-42") != std::string::npos, show(r));
  // A scroll at the screen's bottom is growth too: 80 lines, one every 50 ms.
  r = fx.send(*s.session, request("for i in $(seq 80); do echo scroll-$i; sleep 0.05; done; echo END2-$((6*7))",
                                  1500ms, 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->viewport.find("END2-42") != std::string::npos, show(r));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a short poll of the terminal alone is a reader once it woke and did nothing; one that prints stays a relay") {
  const std::string python = which("python3");
  if (python.empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // The idle time is long: a settle by quiet output would take it; the reader settles first.
  const std::string idle_loop =
      "python3 -c 'import select,sys\n"
      "while not select.select([sys.stdin],[],[],0.5)[0]: pass\n"
      "print(\"got-\" + sys.stdin.readline().strip())'";
  auto r = fx.send(*s.session, request(idle_loop, 20s, 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->evidence == Evidence::stdin_probe, show(r));
  r = fx.send(*s.session, request("ok", 20s, 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("got-ok") != std::string::npos, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));

  // A tick printed on every wake: never a reader, so the send runs to the loop's end.
  const std::string ticking =
      "python3 -c 'import select,sys\n"
      "for i in range(8):\n"
      "    select.select([sys.stdin],[],[],0.3)\n"
      "    print(\"tick\", i*6, flush=True)'";
  r = fx.send(*s.session, request(ticking, 20s, 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->evidence == Evidence::prompt_marks, show(r));
  CHECK_MESSAGE(r->viewport.find("tick 42") != std::string::npos, show(r));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("ipython settles stdin_read at its prompt, not by quiet output") {
  if (which("ipython").empty()) {
    MESSAGE("no ipython on PATH: skipped");
    return;
  }
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, request("ipython --no-banner --no-confirm-exit", 20s, 90s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->evidence == Evidence::stdin_probe, show(r));
  r = fx.send(*s.session, request("6*7", 20s, 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK_MESSAGE(r->viewport.find("42") != std::string::npos, show(r));
  r = fx.send(*s.session, request("exit", 20s, 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}
