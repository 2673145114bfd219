// The session's own operations: resize, signal rules, close joining and retrying.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

TEST_CASE("resize reaches the terminal") {
  ShellFixture fx;
  std::string out;
  auto config = fx.config();
  config.on_raw_output = [&](std::string_view, std::string_view b) { out.append(b); };
  auto s = fx.spawn(config);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(s.shell()->resize(0, 10).error()->code == Code::INVALID_ARGUMENT);
  CHECK(s.shell()->resize(10, 4097).error()->code == Code::INVALID_ARGUMENT);
  REQUIRE(s.shell()->resize(33, 111).ok());
  fx.type(*s.session, "stty size");
  CHECK(run_until(fx.loop(), [&] { return out.find("33 111") != std::string::npos; }));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("SIGKILL to the shell's own group is refused; other signals reach the foreground") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  Status refused = s.session->signal(Signal::sigkill, [](Result<SignalResult>) {
    FAIL("a refused signal must not complete");
  });
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error()->message.find("close the session") != std::string::npos);

  fx.type(*s.session, "sleep 300");
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 1; }));
  pid_t sleeper = marked_processes_named(fx.marker(), "sleep").front();
  // Wait until bash handed the terminal to the job (tpgid, seen from /proc).
  REQUIRE(run_until(fx.loop(), [&] { return foreground_pgid(*s.session->pid()) == sleeper; }));
  bool done = false;
  int target = 0;
  REQUIRE(s.session->signal(Signal::sigint, [&](Result<SignalResult> r) {
    done = true;
    if (r) target = r->target_pgid;
  }).ok());
  CHECK_FALSE(done);  // never inside the call
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  CHECK(target == sleeper);
  CHECK(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").empty(); }));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("close joins a close in flight and completes each caller once") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  int completions = 0;
  for (int i = 0; i < 3; ++i) {
    s.session->close("join", [&](Status st) {
      CHECK(st.ok());
      ++completions;
    });
  }
  CHECK(completions == 0);
  REQUIRE(run_until(fx.loop(), [&] { return completions == 3; }));
  CHECK(fx.close(*s.session).ok());  // already closed: succeeds at once
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a stray holder of the terminal fails close with a report, and a retry succeeds") {
  ShellFixture fx;
  auto config = fx.config();
  config.drain_timeout = 300ms;
  auto s = fx.spawn(config);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // The test itself opens the slave by path: a holder outside the session's tree.
  char target[PATH_MAX];
  std::string link = "/proc/" + std::to_string(*s.session->pid()) + "/fd/0";
  ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  REQUIRE(n > 0);
  target[n] = '\0';
  int stray = ::open(target, O_RDWR | O_NOCTTY | O_CLOEXEC);
  REQUIRE(stray >= 0);
  Status st = fx.close(*s.session);
  REQUIRE_FALSE(st.ok());
  CHECK_MESSAGE(st.error()->message.find("holds its terminal") != std::string::npos,
                describe(st.error()));
  CHECK(s.shell()->quiescent());  // the tree itself is gone
  CHECK(marked_processes(fx.marker()).empty());
  ::close(stray);
  st = fx.close(*s.session);
  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
}

TEST_CASE("a close settles the live send first, with SESSION_CLOSING") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  std::vector<std::string> order;
  Result<SendResult> sent = make_error(Code::BACKEND_FAILED, "pending");
  SendRequest req;
  req.text = "sleep 300";
  auto op = s.session->start_send(req, [&](Result<SendResult> r) {
    order.push_back("send");
    sent = std::move(r);
  });
  REQUIRE(op);
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 1; }));
  bool closed = false;
  s.session->close("test", [&](Status st) {
    CHECK(st.ok());
    order.push_back("close");
    closed = true;
  });
  CHECK_FALSE((*op)->cancel());  // settled by the close already
  REQUIRE(run_until(fx.loop(), [&] { return closed; }));
  CHECK(order == std::vector<std::string>{"send", "close"});
  REQUIRE_FALSE(sent);
  CHECK(sent.error()->code == Code::SESSION_CLOSING);
  op->reset();
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("destroying the session from inside its own completions is safe") {
  ShellFixture fx;
  SUBCASE("inside close's completion") {
    auto s = fx.spawn();
    REQUIRE_MESSAGE(s.session, describe(s.error));
    bool done = false;
    s.session->close("test", [&](Status st) {
      CHECK(st.ok());
      s.session.reset();
      done = true;
    });
    REQUIRE(run_until(fx.loop(), [&] { return done; }));
    CHECK(marked_processes(fx.marker()).empty());
  }
  SUBCASE("inside a send's completion, without a close: the helper kills the tree on EOF") {
    auto s = fx.spawn();
    REQUIRE_MESSAGE(s.session, describe(s.error));
    fx.type(*s.session, "setsid sleep 300 &");
    REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 1; }));
    bool done = false;
    std::unique_ptr<BackendSendOperation> op;
    SendRequest req;
    req.text = "echo bye";
    auto started = s.session->start_send(req, [&](Result<SendResult> r) {
      CHECK(r.ok());
      op.reset();  // the service destroys operations before their session
      s.session.reset();
      done = true;
    });
    REQUIRE(started);
    op = std::move(started.value());
    REQUIRE(run_until(fx.loop(), [&] { return done; }));
    // Not a close: nothing is awaited, but the helper saw EOF and kills everything.
    CHECK(run_until(fx.loop(), [&] { return marked_processes(fx.marker()).empty(); }));
  }
}
