// The host's side of a remote session against a far side that misbehaves on purpose
// (fake_far.py as the transport): every failure ends in words that say what failed, never
// a hang or a crash, and the transport process is gone (reaped) afterwards.
#include <doctest/doctest.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "dshpty/remote.hpp"
#include "fixture.hpp"

namespace dshpty::test {
namespace {

struct FakeFar {
  std::string pidfile = "/tmp/dshpty-fake-far-" + std::to_string(::getpid()) + "-" + fresh_marker("f");
  ~FakeFar() { ::unlink(pidfile.c_str()); }
  pid_t pid() const {
    std::ifstream in(pidfile);
    pid_t p = -1;
    in >> p;
    return p;
  }
};

RemoteConfig config_for(const FakeFar& far, const char* mode) {
  RemoteConfig c;
  c.type = "fake";
  c.transport = {"python3", DSHPTY_TEST_FAKE_FAR, far.pidfile, mode};
  // Long enough that a loaded machine never takes a slow far side for a silent one; the
  // test of a silent far side sets its own.
  c.ping_interval = 100ms;
  c.link_timeout = 10s;
  return c;
}

RemoteConfig quick_silence(RemoteConfig c) {
  c.link_timeout = 300ms;
  return c;
}

Spawned spawn_remote(ShellFixture& fx, RemoteConfig config) {
  auto backend = make_remote_backend(fx.loop(), std::move(config));
  return fx.spawn_on(*backend);
}

// The transport was reaped: no such process (not even a zombie of ours).
bool gone(pid_t pid) { return pid > 0 && ::kill(pid, 0) < 0 && errno == ESRCH; }

std::string words(const Error& e) { return e ? e->message : std::string("(no error)"); }

}  // namespace

TEST_CASE("a transport that fails before the far helper speaks fails the spawn in its words") {
  ShellFixture fx;
  FakeFar far;
  Spawned s = spawn_remote(fx, config_for(far, "exit-words"));
  REQUIRE_FALSE(s.session);
  CHECK(words(s.error) == "python3 exited 255: fake-ssh: connect to host far port 22: Connection refused");
  CHECK(gone(far.pid()));
}

TEST_CASE("a transport that cannot be started fails the spawn naming it") {
  ShellFixture fx;
  RemoteConfig c;
  c.type = "fake";
  c.transport = {"/nonexistent/ssh", "x"};
  Spawned s = spawn_remote(fx, c);
  REQUIRE_FALSE(s.session);
  CHECK(words(s.error).find("cannot start transport /nonexistent/ssh") != std::string::npos);
}

TEST_CASE("another protocol version, garbage, silence: each a clear start failure") {
  struct Case {
    const char* mode;
    const char* expect;
  } cases[] = {
      {"bad-version", "python3: the far dshpty-supervisor speaks protocol version 99; this host speaks 1"},
      {"garbage", "python3: protocol error: frame length 4294967295 outside 1..65536"},
      {"silent", "python3: no frame from the far helper for 300 ms"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.mode);
    ShellFixture fx;
    FakeFar far;
    Spawned s = spawn_remote(fx, quick_silence(config_for(far, c.mode)));
    REQUIRE_FALSE(s.session);
    CHECK(words(s.error) == c.expect);
    CHECK(gone(far.pid()));
  }
}

TEST_CASE("an ERROR code the host does not know is the far helper's failure, in its words") {
  ShellFixture fx;
  FakeFar far;
  Spawned s = spawn_remote(fx, config_for(far, "unknown-error"));
  REQUIRE_FALSE(s.session);
  CHECK(describe(s.error).find("python3: the far helper failed: a newer helper's failure") != std::string::npos);
  CHECK(gone(far.pid()));
}

TEST_CASE("an unknown frame after WELCOME breaks the link: the spawn fails, unconfirmed") {
  ShellFixture fx;
  FakeFar far;
  Spawned s = spawn_remote(fx, config_for(far, "odd-frame"));
  REQUIRE_FALSE(s.session);
  CHECK(describe(s.error).find("protocol error: unknown frame type 200") != std::string::npos);
  // It had spoken: what it may have started cannot be proven gone, and the error says so.
  CHECK(describe(s.error).find("unconfirmed") != std::string::npos);
  CHECK(gone(far.pid()));
}

TEST_CASE("a far side that stops answering: the session turns lost and a close says unconfirmed") {
  ShellFixture fx;
  FakeFar far;
  Spawned s = spawn_remote(fx, quick_silence(config_for(far, "prompt-then-mute")));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(s.session->status().running());
  REQUIRE(run_until(fx.loop(), [&] { return s.session->status().kind == SessionStatus::Kind::lost; }, 10s));
  CHECK(s.session->status().reason == "python3: no frame from the far helper for 300 ms");
  bool closed = false;
  Status result;
  s.session->close("test", [&](Status st) {
    closed = true;
    result = st;
  });
  REQUIRE(run_until(fx.loop(), [&] { return closed; }, 10s));
  REQUIRE_FALSE(result);
  CHECK(words(result.error()).find("unconfirmed") != std::string::npos);
  CHECK(gone(far.pid()));
}

TEST_CASE("the link ends during a send: the send completes session_exit and the status is lost") {
  ShellFixture fx;
  FakeFar far;
  Spawned s = spawn_remote(fx, config_for(far, "prompt-then-exit"));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  bool done = false;
  Result<SendResult> result = make_error(Code::BACKEND_FAILED, "not completed");
  auto op = s.session->start_send(request("echo hi"), [&](Result<SendResult> r) {
    done = true;
    result = std::move(r);
  });
  REQUIRE(op);
  REQUIRE(run_until(fx.loop(), [&] { return done; }, 10s));
  REQUIRE(result);
  CHECK(result->wait_reason == WaitReason::session_exit);
  CHECK(result->session_status.kind == SessionStatus::Kind::lost);
  CHECK(result->session_status.reason == "python3 exited 0");
  CHECK(gone(far.pid()));
  // A signal or a send on a lost session: it has exited, as far as anyone can act on it.
  CHECK(s.session->start_send(request("echo again"), [](Result<SendResult>) {}).error()->code ==
        Code::SESSION_EXITED);
}

}  // namespace dshpty::test
