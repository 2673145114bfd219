// End to end through the Service: the shell backend registered, a session spawned, a send,
// a read, a kill, and an owner disposal, each leaving no process behind.
#include <doctest/doctest.h>

#include "dshpty/service.hpp"
#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

struct ServiceFixture : ShellFixture {
  Service service{loop()};
  Owner owner = service.mint_owner("agent");
  ServiceFixture() {
    auto reg = service.register_backend(make_shell_backend(loop(), config()));
    REQUIRE(reg);
  }
  ~ServiceFixture() {
    bool done = false;
    service.dispose([&](Status) { done = true; });
    run_until(loop(), [&] { return done; }, 30s);
  }

  Result<SpawnResult> spawn(std::optional<std::string> name = {}) {
    bool done = false;
    Result<SpawnResult> out = make_error(Code::BACKEND_FAILED, "pending");
    SpawnOptions opts;
    opts.type = "shell";
    opts.name = std::move(name);
    service.spawn(owner, opts, [&](Result<SpawnResult> r) {
      done = true;
      out = std::move(r);
    });
    run_until(loop(), [&] { return done; }, 30s);
    return out;
  }
};

}  // namespace

TEST_CASE("through the Service: spawn, send, read, kill") {
  ServiceFixture fx;
  auto spawned = fx.spawn("main");
  REQUIRE_MESSAGE(spawned, describe(spawned.error()));
  const std::string id = spawned->session.id;
  CHECK(spawned->session.type == "shell");
  CHECK(spawned->session.pid.has_value());
  CHECK(spawned->session.status.running());

  bool done = false;
  Result<SendResult> result = make_error(Code::BACKEND_FAILED, "pending");
  SendRequest req;
  req.text = "echo through-the-service";
  auto send = fx.service.start_send(fx.owner, id, req, [&](Result<SendResult> r) {
    done = true;
    result = std::move(r);
  });
  REQUIRE(send);
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  REQUIRE_MESSAGE(result, describe(result.error()));
  CHECK(result->wait_reason == WaitReason::stdin_read);
  CHECK(result->viewport.find("through-the-service\n") != std::string::npos);
  auto delta = (*send)->read_output();
  CHECK(delta.text.find("through-the-service") != std::string::npos);

  auto page = fx.service.read(fx.owner, id, {});
  REQUIRE(page);
  CHECK(page->text.find("through-the-service") != std::string::npos);

  // Leave escapees behind, then kill through the Service.
  done = false;
  req.text = "setsid sleep 300 & nohup sleep 300 >/dev/null 2>&1 &";
  send = fx.service.start_send(fx.owner, id, req, [&](Result<SendResult> r) {
    done = true;
    result = std::move(r);
  });
  REQUIRE(send);
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 2; }));

  bool killed = false;
  Result<bool> kill_result = make_error(Code::BACKEND_FAILED, "pending");
  REQUIRE(fx.service.kill(fx.owner, id, [&](Result<bool> r) {
    killed = true;
    kill_result = std::move(r);
  }).ok());
  REQUIRE(run_until(fx.loop(), [&] { return killed; }));
  REQUIRE_MESSAGE(kill_result, describe(kill_result.error()));
  CHECK(*kill_result);
  CHECK(fx.service.list(fx.owner).empty());
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}

TEST_CASE("through the Service: disposing the owner closes its sessions, sends in flight too") {
  ServiceFixture fx;
  auto a = fx.spawn("a");
  auto b = fx.spawn("b");
  REQUIRE_MESSAGE(a, describe(a.error()));
  REQUIRE_MESSAGE(b, describe(b.error()));
  bool send_done = false;
  Result<SendResult> send_result = make_error(Code::BACKEND_FAILED, "pending");
  SendRequest req;
  req.text = "sleep 300";
  auto send = fx.service.start_send(fx.owner, a->session.id, req, [&](Result<SendResult> r) {
    send_done = true;
    send_result = std::move(r);
  });
  REQUIRE(send);
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 1; }));
  CHECK(fx.service.has_owner_activity(fx.owner));

  bool disposed = false;
  Status dispose_status = make_error(Code::BACKEND_FAILED, "pending");
  fx.service.dispose_owner(fx.owner, [&](Status st) {
    disposed = true;
    dispose_status = st;
  });
  REQUIRE(run_until(fx.loop(), [&] { return disposed; }));
  CHECK_MESSAGE(dispose_status.ok(), (dispose_status ? "" : describe(dispose_status.error())));
  CHECK(send_done);
  REQUIRE_FALSE(send_result);
  CHECK(send_result.error()->code == Code::SESSION_CLOSING);
  CHECK_FALSE(fx.service.has_owner_activity(fx.owner));
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}

TEST_CASE("through the Service: an aborted spawn rejects with the caller's exact reason") {
  ServiceFixture fx;
  AbortController controller;
  Error reason = make_error(Code::ABORTED, "caller gave up");
  bool done = false;
  Result<SpawnResult> out = make_error(Code::BACKEND_FAILED, "pending");
  SpawnOptions opts;
  opts.type = "shell";
  opts.signal = controller.signal();
  fx.service.spawn(fx.owner, opts, [&](Result<SpawnResult> r) {
    done = true;
    out = std::move(r);
  });
  // Abort once the shell is running but before its first prompt was seen, if we catch it.
  run_until(fx.loop(), [&] { return done || !marked_processes(fx.marker()).empty(); });
  controller.abort(reason);
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  REQUIRE_FALSE(out);
  CHECK(out.error() == reason);
  CHECK(fx.service.records().empty());
  CHECK(marked_processes(fx.marker()).empty());
}
