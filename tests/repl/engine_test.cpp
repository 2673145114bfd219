// The tools' engine on its own, over a real Service and the scripted backend: owners by
// label, sends by key, pending opens, send defaults, and a shutdown that settles only once
// every callback ran. Every callback is checked to run once, from the loop, never inside
// the call that started it and never after a synchronous failure.
#include <doctest/doctest.h>

#include <ev.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dshpty/scripted.hpp"
#include "dshpty/service.hpp"
#include "engine.hpp"
#include "loop_turns.hpp"

using namespace dshpty;
using namespace dshpty::engine;
using namespace std::chrono_literals;

namespace {

using test::run_until;

void turns(struct ev_loop* loop, int n) {
  for (int i = 0; i < n; ++i) ev_run(loop, EVRUN_NOWAIT);
}

// Records one callback's outcome and how often it ran.
template <class T>
struct Outcome {
  int calls = 0;
  std::optional<Result<T>> result;
  Callback<T> callback() {
    return [this](Result<T> r) {
      ++calls;
      result = std::move(r);
    };
  }
  bool done() const { return calls > 0; }
};

struct EngineFixture {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  std::shared_ptr<ScriptedBackend> backend = std::make_shared<ScriptedBackend>(loop, "shell");
  std::unique_ptr<Service> service = std::make_unique<Service>(loop);
  std::unique_ptr<Engine> engine;

  explicit EngineFixture(Settings settings = {}) {
    REQUIRE(service->register_backend(backend));
    engine = std::make_unique<Engine>(*service, settings);
  }
  ~EngineFixture() {
    bool disposed = false;
    service->dispose([&](Status) { disposed = true; });
    run_until(loop, [&] { return disposed; });
    run_until(loop, [&] { return backend->pending() == 0; }, 1000);
    engine.reset();
    service.reset();
    backend.reset();
    ev_loop_destroy(loop);
  }

  // Opens a session for `owner` and returns its id.
  std::string open(const std::string& owner, std::optional<std::string> name = std::nullopt) {
    Outcome<SpawnResult> opened;
    engine->open(owner, {.type = "shell", .name = std::move(name)}, opened.callback());
    REQUIRE(run_until(loop, [&] { return opened.done(); }));
    REQUIRE(*opened.result);
    return (*opened.result)->session.id;
  }

  // The next send on `id` waits for the returned gate (and settles when cancelled).
  std::shared_ptr<ScriptedGate> hold_next_send(const std::string& id) {
    auto gate = ScriptedGate::make();
    ScriptedSend send = ScriptedSend::with(ScriptedStep::gated(gate));
    send.output = {{"partial", false}};
    send.settle_on_cancel = true;
    backend->session_script(id).sends.push(send);
    return gate;
  }
};

}  // namespace

TEST_CASE("a label names one owner until it is disposed, then a fresh one") {
  EngineFixture f;
  const Owner first = f.engine->owner("agent");
  CHECK(f.engine->owner("agent") == first);
  CHECK_FALSE(f.engine->owner("other") == first);

  const std::string id = f.open("agent", "main");
  CHECK(f.engine->has_activity("agent"));
  CHECK_FALSE(f.engine->has_activity("other"));
  CHECK(f.engine->resolve("agent", "main") == id);
  CHECK(f.engine->resolve("agent", id) == id);
  CHECK_FALSE(f.engine->resolve("other", "main"));

  Outcome<void> disposed;
  REQUIRE(f.engine->dispose_owner("agent", disposed.callback()));
  CHECK_FALSE(disposed.done());
  CHECK(f.engine->pending() == 1);
  // The label already names a new owner, while the old one is torn down.
  CHECK_FALSE(f.engine->owner("agent") == first);
  CHECK(f.engine->list("agent").empty());
  REQUIRE(run_until(f.loop, [&] { return disposed.done(); }));
  CHECK(*disposed.result);
  CHECK(f.engine->pending() == 0);
  CHECK(f.backend->all_processes_gone());

  Outcome<void> never;
  CHECK_FALSE(f.engine->dispose_owner("never-used", never.callback()));
  turns(f.loop, 5);
  CHECK(never.calls == 0);
}

TEST_CASE("sends are found by key while live and for a while after they settle") {
  EngineFixture f;
  const std::string id = f.open("a");
  auto gate = f.hold_next_send(id);

  Outcome<SendResult> sent;
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "sleep 30"}}, "k1", sent.callback()));
  CHECK(f.engine->pending() == 1);

  Outcome<SendResult> duplicate;
  const auto refused = f.engine->send("a", {.session_id = id, .request = {.text = "x"}}, "k1", duplicate.callback());
  REQUIRE_FALSE(refused);
  CHECK(refused.error()->code == Code::INVALID_ARGUMENT);
  CHECK(refused.error()->message == "a live send already uses request id k1");

  Outcome<SendResult> busy;
  const auto active = f.engine->send("a", {.session_id = id, .request = {.text = "x"}}, "k2", busy.callback());
  REQUIRE_FALSE(active);
  CHECK(active.error()->code == Code::SEND_ACTIVE);

  const auto delta = f.engine->send_output("a", "k1");
  REQUIRE(delta);
  CHECK(delta->text == "partial");
  const auto unknown = f.engine->cancel_send("a", "nope");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error()->message == "no send with id nope");
  CHECK_FALSE(f.engine->send_output("a", "nope"));
  // Another owner who knows the id reaches nothing: fenced to the exact owner.
  const auto foreign = f.engine->cancel_send("b", "k1");
  REQUIRE_FALSE(foreign);
  CHECK(foreign.error()->code == Code::FOREIGN_SESSION);
  CHECK(foreign.error()->message == "send k1 belongs to another owner");
  const auto foreign_output = f.engine->send_output("b", "k1");
  REQUIRE_FALSE(foreign_output);
  CHECK(foreign_output.error()->code == Code::FOREIGN_SESSION);

  const auto cancelled = f.engine->cancel_send("a", "k1");
  REQUIRE(cancelled);
  CHECK(*cancelled);
  REQUIRE(run_until(f.loop, [&] { return sent.done(); }));
  CHECK(*sent.result);
  CHECK(f.engine->pending() == 0);

  // Settled: still found, no longer cancellable, and its key is free again.
  const auto late = f.engine->cancel_send("a", "k1");
  REQUIRE(late);
  CHECK_FALSE(*late);
  Outcome<SendResult> again;
  CHECK(f.engine->send("a", {.session_id = id, .request = {.text = "y"}}, "k1", again.callback()));
  REQUIRE(run_until(f.loop, [&] { return again.done(); }));

  turns(f.loop, 5);
  CHECK(sent.calls == 1);
  CHECK(again.calls == 1);
  CHECK(duplicate.calls == 0);
  CHECK(busy.calls == 0);
}

TEST_CASE("only the most recent settled sends stay reachable") {
  EngineFixture f;
  const std::string id = f.open("a");
  const int sends = static_cast<int>(SendTable::kSettledKept) + 1;
  for (int i = 0; i < sends; ++i) {
    Outcome<SendResult> sent;
    REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "x"}}, "s" + std::to_string(i),
                           sent.callback()));
    REQUIRE(run_until(f.loop, [&] { return sent.done(); }));
  }
  CHECK_FALSE(f.engine->cancel_send("a", "s0"));
  CHECK(f.engine->cancel_send("a", "s1"));
  CHECK(f.engine->cancel_send("a", "s" + std::to_string(sends - 1)));
}

TEST_CASE("a send that names no timeout or idle takes the engine's defaults") {
  EngineFixture f({.max_result_bytes = 1024, .send_idle = 700ms, .send_timeout = 9000ms});
  CHECK(f.engine->settings().max_result_bytes == 1024);
  const std::string id = f.open("a");
  Outcome<SendResult> first, second;
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "x"}}, "1", first.callback()));
  REQUIRE(run_until(f.loop, [&] { return first.done(); }));
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "y", .timeout = 5ms, .idle = 6ms}}, "2",
                         second.callback()));
  REQUIRE(run_until(f.loop, [&] { return second.done(); }));

  const auto& requests = f.backend->session(id)->sends;
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].idle == 700ms);
  CHECK(requests[0].timeout == 9000ms);
  CHECK(requests[1].idle == 6ms);
  CHECK(requests[1].timeout == 5ms);
}

TEST_CASE("without defaults a send leaves timeout and idle to the backend") {
  EngineFixture f;
  const std::string id = f.open("a");
  Outcome<SendResult> sent;
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "x"}}, "1", sent.callback()));
  REQUIRE(run_until(f.loop, [&] { return sent.done(); }));
  CHECK_FALSE(f.backend->session(id)->sends[0].idle);
  CHECK_FALSE(f.backend->session(id)->sends[0].timeout);
}

TEST_CASE("a pending open with a key can be aborted; one without cannot") {
  EngineFixture f;
  auto gate = ScriptedGate::make();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate)));
  Outcome<SpawnResult> opened;
  f.engine->open("a", {.type = "shell"}, opened.callback(), "open-1");
  CHECK_FALSE(opened.done());
  CHECK_FALSE(f.engine->abort_open("other", make_error(Code::ABORTED, "stop")));
  CHECK(f.engine->abort_open("open-1", make_error(Code::ABORTED, "stop")));
  REQUIRE(run_until(f.loop, [&] { return opened.done(); }));
  REQUIRE_FALSE(*opened.result);
  CHECK(opened.result->error()->message == "stop");
  // Settled: the key names nothing any more.
  CHECK_FALSE(f.engine->abort_open("open-1", make_error(Code::ABORTED, "again")));

  Outcome<SpawnResult> plain;
  f.engine->open("a", {.type = "shell"}, plain.callback());
  CHECK(f.engine->pending() == 1);
  REQUIRE(run_until(f.loop, [&] { return plain.done(); }));
  CHECK(*plain.result);
  CHECK(opened.calls == 1);
  CHECK(plain.calls == 1);
}

TEST_CASE("synchronous failures never call back and are not counted as pending") {
  EngineFixture f;
  Outcome<SendResult> sent;
  Outcome<SignalResult> signalled;
  Outcome<bool> closed;
  CHECK(f.engine->send("a", {.session_id = "pty-9", .request = {.text = "x"}}, "1", sent.callback()).error()->code ==
        Code::NO_SESSION);
  CHECK(f.engine->signal("a", {.session_id = "pty-9"}, signalled.callback()).error()->code == Code::NO_SESSION);
  CHECK(f.engine->close("a", {.session_id = "pty-9"}, closed.callback()).error()->code == Code::NO_SESSION);
  CHECK(f.engine->read("a", {.session_id = "pty-9"}).error()->code == Code::NO_SESSION);
  CHECK(f.engine->pending() == 0);
  turns(f.loop, 5);
  CHECK(sent.calls + signalled.calls + closed.calls == 0);
}

TEST_CASE("signal and close complete from the loop, once each") {
  EngineFixture f;
  const std::string id = f.open("a");
  Outcome<SignalResult> signalled;
  REQUIRE(f.engine->signal("a", {.session_id = id, .signal = Signal::sigterm}, signalled.callback()));
  Outcome<bool> closed, joined;
  REQUIRE(f.engine->close("a", {.session_id = id}, closed.callback()));
  REQUIRE(f.engine->close("a", {.session_id = id}, joined.callback()));
  CHECK(f.engine->pending() == 3);
  CHECK_FALSE((signalled.done() || closed.done() || joined.done()));
  REQUIRE(run_until(f.loop, [&] { return signalled.done() && closed.done() && joined.done(); }));
  CHECK(f.backend->session(id)->signals == std::vector<Signal>{Signal::sigterm});
  CHECK(**closed.result);
  CHECK_FALSE(**joined.result);
  CHECK(f.engine->pending() == 0);
  turns(f.loop, 5);
  CHECK(signalled.calls + closed.calls + joined.calls == 3);
}

TEST_CASE("shutdown completes after every owed callback, once per call") {
  EngineFixture f;
  const std::string id = f.open("a");
  f.hold_next_send(id);
  std::vector<std::string> order;
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "sleep 30"}}, "1",
                         [&](Result<SendResult>) { order.push_back("send"); }));
  f.engine->shutdown([&](Status result) {
    CHECK(result);
    order.push_back("shutdown 1");
  });
  CHECK(f.engine->shutting_down());
  f.engine->shutdown([&](Status) { order.push_back("shutdown 2"); });
  CHECK(order.empty());
  REQUIRE(run_until(f.loop, [&] { return order.size() == 3; }));
  CHECK(order == std::vector<std::string>{"send", "shutdown 1", "shutdown 2"});
  CHECK(f.backend->all_processes_gone());
  CHECK_FALSE(f.engine->cancel_send("a", "1"));  // the service is gone: nothing points into it

  // Afterwards: the same outcome, on a later loop turn.
  bool late = false;
  f.engine->shutdown([&](Status result) {
    CHECK(result);
    late = true;
  });
  CHECK_FALSE(late);
  REQUIRE(run_until(f.loop, [&] { return late; }));
  turns(f.loop, 5);
  CHECK(order.size() == 3);
}

TEST_CASE("a send right after a cancel waits for the cancelled send, then runs; a cancel drops a waiting one") {
  EngineFixture f;
  const std::string id = f.open("a");
  auto gate = f.hold_next_send(id);
  Outcome<SendResult> first;
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "sleep 30"}}, "k1", first.callback()));
  const auto cancelled = f.engine->cancel_send("a", "k1");
  REQUIRE(cancelled);
  REQUIRE(*cancelled);

  // The cancelled send has not settled yet: the next send waits instead of SEND_ACTIVE.
  Outcome<SendResult> next, dropped, foreign;
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "echo next"}}, "k2", next.callback()));
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "echo dropped"}}, "k3", dropped.callback()));
  CHECK(f.engine->pending() == 3);
  CHECK(f.engine->send("a", {.session_id = id, .request = {.text = "x"}}, "k2", next.callback()).error()->code ==
        Code::INVALID_ARGUMENT);
  // Waiting: no output yet, fenced to its owner; another owner's send is not queued.
  REQUIRE(f.engine->send_output("a", "k2"));
  CHECK(f.engine->send_output("a", "k2")->text.empty());
  CHECK(f.engine->cancel_send("b", "k2").error()->code == Code::FOREIGN_SESSION);
  CHECK(f.engine->send("b", {.session_id = id, .request = {.text = "x"}}, "k4", foreign.callback()).error()->code ==
        Code::FOREIGN_SESSION);
  const auto drop = f.engine->cancel_send("a", "k3");
  REQUIRE(drop);
  CHECK(*drop);
  CHECK(first.calls == 0);
  CHECK(next.calls == 0);

  REQUIRE(run_until(f.loop, [&] { return next.done(); }));
  CHECK(*first.result);
  CHECK(*next.result);
  REQUIRE(dropped.done());
  REQUIRE_FALSE(*dropped.result);
  CHECK(dropped.result->error()->code == Code::ABORTED);
  CHECK(f.engine->pending() == 0);
  // The session is free again: a send goes straight through.
  Outcome<SendResult> after;
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "y"}}, "k5", after.callback()));
  REQUIRE(run_until(f.loop, [&] { return after.done(); }));
  turns(f.loop, 5);
  CHECK(first.calls == 1);
  CHECK(next.calls == 1);
  CHECK(dropped.calls == 1);
  CHECK(foreign.calls == 0);
}

TEST_CASE("shutdown with a send waiting behind a cancelled one completes both") {
  EngineFixture f;
  const std::string id = f.open("a");
  auto gate = f.hold_next_send(id);
  Outcome<SendResult> first, waiting;
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "sleep 30"}}, "k1", first.callback()));
  REQUIRE(*f.engine->cancel_send("a", "k1"));
  REQUIRE(f.engine->send("a", {.session_id = id, .request = {.text = "echo next"}}, "k2", waiting.callback()));
  Outcome<void> down;
  f.engine->shutdown(down.callback());
  REQUIRE(run_until(f.loop, [&] { return down.done(); }));
  CHECK(first.calls == 1);
  CHECK(waiting.calls == 1);
  CHECK(f.engine->pending() == 0);
}

TEST_CASE("each owner has its own send keys: the same key runs for both, reaches only the caller's own") {
  EngineFixture f;
  const std::string ida = f.open("alice");
  const std::string idb = f.open("bob");
  auto held = [&](const std::string& id, const std::string& text) {
    ScriptedSend send = ScriptedSend::with(ScriptedStep::gated(ScriptedGate::make()));
    send.output = {{text, false}};
    send.settle_on_cancel = true;
    f.backend->session_script(id).sends.push(send);
  };
  held(ida, "alice's");
  held(idb, "bob's");
  Outcome<SendResult> alice_dev, bob_dev;
  REQUIRE(f.engine->send("alice", {.session_id = ida, .request = {.text = "sleep 30", .background = true}}, "dev",
                         alice_dev.callback()));
  // Bob's request numbering met alice's: his send runs, and nothing says hers exists.
  REQUIRE(f.engine->send("bob", {.session_id = idb, .request = {.text = "sleep 30", .background = true}}, "dev",
                         bob_dev.callback()));
  CHECK(f.engine->send_live("alice", "dev"));
  CHECK(f.engine->send_live("bob", "dev"));
  CHECK(f.engine->live_send_on("bob", idb) == "dev");
  CHECK_FALSE(f.engine->live_send_on("bob", ida));
  CHECK(f.engine->send_output("alice", "dev")->text == "alice's");
  CHECK(f.engine->send_output("bob", "dev")->text == "bob's");
  // A stop reaches the caller's own send (the scripted backend cannot stop jobs: its answer).
  Outcome<StopResult> stopped;
  const auto stop = f.engine->stop_send("bob", "dev", stopped.callback());
  REQUIRE_FALSE(stop);
  CHECK(stop.error()->code == Code::INVALID_ARGUMENT);
  CHECK(stop.error()->message == "this backend cannot stop a job");
  // Bob's cancel settles his send; alice's runs on.
  REQUIRE(*f.engine->cancel_send("bob", "dev"));
  REQUIRE(run_until(f.loop, [&] { return bob_dev.done(); }));
  CHECK_FALSE(alice_dev.done());
  CHECK(f.engine->send_live("alice", "dev"));
  CHECK_FALSE(f.engine->send_live("bob", "dev"));

  // A key only alice has (live, waiting behind her cancelled send, or ended and kept):
  // every by-key operation of bob's answers FOREIGN_SESSION, never "no send".
  auto foreign = [&](const std::string& key) {
    INFO(key);
    CHECK(f.engine->cancel_send("bob", key).error()->code == Code::FOREIGN_SESSION);
    CHECK(f.engine->send_output("bob", key).error()->code == Code::FOREIGN_SESSION);
    Outcome<StopResult> stop;
    CHECK(f.engine->stop_send("bob", key, stop.callback()).error()->code == Code::FOREIGN_SESSION);
    Outcome<SendOutputAnswer> read;
    CHECK(f.engine->read_send_output("bob", key, {.offset = 0, .wait = {}, .max_bytes = 64}, read.callback())
              .error()->code == Code::FOREIGN_SESSION);
    CHECK_FALSE(f.engine->send_live("bob", key));
    turns(f.loop, 3);
    CHECK(stop.calls + read.calls == 0);
  };
  CHECK(f.engine->cancel_send("bob", "only-a").error()->code == Code::INVALID_ARGUMENT);  // nobody's yet
  // Bob's own ended "dev" is still his while alice's runs under the same key.
  REQUIRE(f.engine->cancel_send("bob", "dev"));
  CHECK_FALSE(*f.engine->cancel_send("bob", "dev"));
  CHECK(f.engine->send_output("bob", "dev"));
  REQUIRE(*f.engine->cancel_send("alice", "dev"));
  Outcome<SendResult> alice_waiting;
  REQUIRE(f.engine->send("alice", {.session_id = ida, .request = {.text = "echo a"}}, "only-a", alice_waiting.callback()));
  CHECK_FALSE(alice_dev.done());  // so "only-a" waits behind it
  foreign("only-a");
  CHECK(f.engine->send_output("alice", "only-a"));
  REQUIRE(run_until(f.loop, [&] { return alice_dev.done() && alice_waiting.done(); }));
  foreign("only-a");  // ended and kept
  CHECK(f.engine->send_output("alice", "only-a"));
  CHECK(f.engine->pending() == 0);
}
