// The coroutine adaptor (include/dshpty/coro.hpp) on the scripted backend: each awaitable
// resumes from its operation's completion, on the loop, never inside the call that started
// it; synchronous failures are ready at once; the Send handle works mid-send; a coroutine
// may dispose the service it awaits on.
#include <doctest/doctest.h>
#include <ev.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dshpty/coro.hpp>
#include <dshpty/scripted.hpp>
#include <dshpty/service.hpp>

#include "embed_support.hpp"

namespace coro = dshpty::coro;

// REQUIRE throws, and an exception escaping a Task terminates the process: inside a
// coroutine, check and return instead.
#define CO_REQUIRE(...)        \
  do {                         \
    CHECK(__VA_ARGS__);        \
    if (!(__VA_ARGS__)) co_return; \
  } while (0)

namespace {

struct Fixture {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  std::shared_ptr<dshpty::ScriptedBackend> backend =
      std::make_shared<dshpty::ScriptedBackend>(loop);
  std::optional<dshpty::Service> service{std::in_place, loop};
  dshpty::Owner owner;
  std::vector<std::string> trace;

  Fixture() {
    REQUIRE(service->register_backend(backend));
    owner = service->mint_owner("coro");
  }
  ~Fixture() {
    (void)embed::dispose_and_sweep(*service, loop);
    service.reset();
    backend.reset();
    ev_loop_destroy(loop);
  }
  bool drive(const coro::Task& task) {
    return embed::run_until(loop, [&] { return task.done(); });
  }
};

// Options made outside the coroutine: g++ 12 double-destroys a braced aggregate temporary
// inside a co_await expression (see coro.hpp).
dshpty::SpawnOptions scripted(const char* name = nullptr) {
  dshpty::SpawnOptions options{.type = "scripted"};
  if (name) options.name = name;
  return options;
}
dshpty::SendRequest text(const char* t) { return {.text = t}; }

dshpty::SendResult viewport(std::string text) {
  dshpty::SendResult r;
  r.viewport = std::move(text);
  r.wait_reason = dshpty::WaitReason::stdin_read;
  return r;
}

}  // namespace

TEST_CASE("coro: spawn, send, kill, dispose_owner and dispose in one coroutine") {
  Fixture f;
  f.backend->every_session().sends.set_default(
      dshpty::ScriptedSend::with(dshpty::ScriptedStep::succeed(), viewport("hi\n")));

  auto task = [](Fixture& f) -> coro::Task {
    auto opened = co_await coro::spawn(*f.service, f.owner, scripted("a"));
    CO_REQUIRE(opened.ok());
    f.trace.push_back("spawned " + opened->session.id);
    auto sent = co_await coro::send(*f.service, f.owner, opened->session.id, text("x"));
    CO_REQUIRE(sent.ok());
    f.trace.push_back("sent " + sent->viewport);
    auto killed = co_await coro::kill(*f.service, f.owner, opened->session.id);
    CO_REQUIRE(killed.ok());
    f.trace.push_back(*killed ? "killed" : "joined");
    auto second = co_await coro::spawn(*f.service, f.owner, scripted("b"));
    CO_REQUIRE(second.ok());
    dshpty::Status owner_gone = co_await coro::dispose_owner(*f.service, f.owner);
    f.trace.push_back(owner_gone.ok() ? "owner disposed" : dshpty::describe(owner_gone.error()));
    dshpty::Status gone = co_await coro::dispose(*f.service);
    f.trace.push_back(gone.ok() ? "disposed" : dshpty::describe(gone.error()));
  }(f);

  // The coroutine ran up to its first co_await and is waiting there: nothing completed
  // inside the call that started the spawn.
  CHECK_FALSE(task.done());
  CHECK(f.trace.empty());
  REQUIRE(f.drive(task));
  CHECK(f.trace == std::vector<std::string>{"spawned pty-1", "sent hi\n", "killed",
                                            "owner disposed", "disposed"});
  CHECK_FALSE(f.service->has_owner_activity(f.owner));
  CHECK(f.service->disposing());
  CHECK(f.backend->all_processes_gone());
}

TEST_CASE("coro: a synchronous failure is ready at once and does not suspend") {
  Fixture f;
  bool resumed_inline = false;
  auto task = [](Fixture& f, bool& resumed_inline) -> coro::Task {
    auto sent = co_await coro::send(*f.service, f.owner, "pty-404", text("x"));
    resumed_inline = true;
    CO_REQUIRE(!(sent.ok()));
    CHECK(sent.error()->code == dshpty::Code::NO_SESSION);
    auto killed = co_await coro::kill(*f.service, f.owner, "pty-404");
    CO_REQUIRE(!(killed.ok()));
    CHECK(killed.error()->code == dshpty::Code::NO_SESSION);
    auto signalled = co_await coro::signal(*f.service, f.owner, "pty-404",
                                           dshpty::Signal::sigint);
    CO_REQUIRE(!(signalled.ok()));
    CHECK(signalled.error()->code == dshpty::Code::NO_SESSION);
  }(f, resumed_inline);
  CHECK(resumed_inline);
  CHECK(task.done());  // never suspended: finished inside the call
}

TEST_CASE("coro: failures that come through the completion arrive as results") {
  Fixture f;
  auto boom = dshpty::make_error(dshpty::Code::BACKEND_FAILED, "scripted boom");
  f.backend->spawns().push(dshpty::ScriptedSpawn::with(dshpty::ScriptedStep::fail(boom)));
  dshpty::Error got;
  auto task = [](Fixture& f, dshpty::Error& got) -> coro::Task {
    auto opened = co_await coro::spawn(*f.service, f.owner, scripted());
    CO_REQUIRE(!(opened.ok()));
    got = opened.error();
    // An owner the service never minted: a completion-time failure too.
    dshpty::Status none = co_await coro::dispose_owner(*f.service, dshpty::Owner());
    CO_REQUIRE(!(none.ok()));
    CHECK(none.error()->code == dshpty::Code::OWNER_NOT_LIVE);
  }(f, got);
  REQUIRE(f.drive(task));
  CHECK(got == boom);  // the backend's exact error object
}

TEST_CASE("coro: the send handle reads output and cancels while the send is live") {
  Fixture f;
  auto gate = dshpty::ScriptedGate::make();
  dshpty::ScriptedSend script =
      dshpty::ScriptedSend::with(dshpty::ScriptedStep::gated(gate), viewport("never\n"));
  script.output = {{"partial ", false}};
  script.settle_on_cancel = true;
  script.cancel_wait_reason = dshpty::WaitReason::stdin_read;
  f.backend->every_session().sends.push(script);

  std::optional<dshpty::Result<dshpty::SpawnResult>> opened;
  f.service->spawn(f.owner, scripted(), [&](auto r) { opened.emplace(std::move(r)); });
  REQUIRE(embed::run_until(f.loop, [&] { return opened.has_value(); }));
  REQUIRE(opened->ok());
  const std::string id = (*opened)->session.id;

  std::string seen;
  bool cancelled = false;
  std::optional<dshpty::Result<dshpty::SendResult>> result;
  auto task = [](Fixture& f, std::string id, std::string& seen, bool& cancelled,
                 std::optional<dshpty::Result<dshpty::SendResult>>& result) -> coro::Task {
    auto op = coro::send(*f.service, f.owner, id, text("sleep 100"));
    CO_REQUIRE(op.handle() != nullptr);
    // A second send while this one is live fails at once with SEND_ACTIVE.
    auto again = coro::send(*f.service, f.owner, id, text("y"));
    CHECK(again.handle() == nullptr);
    auto second = co_await again;
    CO_REQUIRE(!(second.ok()));
    CHECK(second.error()->code == dshpty::Code::SEND_ACTIVE);
    seen = op.handle()->read_output().text;
    cancelled = op.handle()->cancel();
    result.emplace(co_await op);
  }(f, id, seen, cancelled, result);

  CHECK_FALSE(task.done());  // waiting on the gated send
  REQUIRE(f.drive(task));
  CHECK(seen == "partial ");
  CHECK(cancelled);
  REQUIRE(result.has_value());
  REQUIRE(result->ok());
  CHECK((*result)->wait_reason == dshpty::WaitReason::stdin_read);
}

TEST_CASE("coro: an operation that completed before it was awaited is ready") {
  Fixture f;
  auto op = coro::spawn(*f.service, f.owner, scripted());
  CHECK_FALSE(op.await_ready());  // never inside the call
  REQUIRE(embed::run_until(f.loop, [&] { return op.await_ready(); }));
  std::optional<std::string> id;
  auto task = [](coro::Operation<dshpty::SpawnResult>& op,
                 std::optional<std::string>& id) -> coro::Task {
    auto opened = co_await op;
    CO_REQUIRE(opened.ok());
    id = opened->session.id;
  }(op, id);
  CHECK(task.done());  // nothing to wait for
  CHECK(id == "pty-1");
}

TEST_CASE("coro: an operation dropped without being awaited still completes harmlessly") {
  Fixture f;
  {
    auto dropped = coro::spawn(*f.service, f.owner, scripted("dropped"));
  }
  REQUIRE(embed::run_until(f.loop, [&] { return f.service->list(f.owner).size() == 1; }));
  CHECK(f.backend->spawn_records().at(0).completions == 1);
}

TEST_CASE("coro: two kills of one session: one closes it, the other joins") {
  Fixture f;
  auto gate = dshpty::ScriptedGate::make();
  f.backend->every_session().closes.push(dshpty::ScriptedStep::gated(gate));
  std::vector<std::string> results;
  auto task = [](Fixture& f, std::shared_ptr<dshpty::ScriptedGate> gate,
                 std::vector<std::string>& results) -> coro::Task {
    auto opened = co_await coro::spawn(*f.service, f.owner, scripted());
    CO_REQUIRE(opened.ok());
    auto first = coro::kill(*f.service, f.owner, opened->session.id);
    auto second = coro::kill(*f.service, f.owner, opened->session.id, "again");
    gate->open();
    for (auto* op : {&first, &second}) {
      auto killed = co_await *op;
      CO_REQUIRE(killed.ok());
      results.push_back(*killed ? "closed" : "joined");
    }
  }(f, gate, results);
  REQUIRE(f.drive(task));
  CHECK(results == std::vector<std::string>{"closed", "joined"});
}

TEST_CASE("coro: the code after a co_await may dispose the service it awaited on") {
  Fixture f;
  bool disposed = false;
  auto task = [](Fixture& f, bool& disposed) -> coro::Task {
    auto opened = co_await coro::spawn(*f.service, f.owner, scripted());
    CO_REQUIRE(opened.ok());
    // Still inside the spawn's completion callback here: re-entering is allowed.
    auto gone = co_await coro::dispose(*f.service);
    disposed = gone.ok();
    auto late = co_await coro::spawn(*f.service, f.owner, scripted());
    CO_REQUIRE(!(late.ok()));
    CHECK(late.error()->code == dshpty::Code::SERVICE_DISPOSING);
  }(f, disposed);
  REQUIRE(f.drive(task));
  CHECK(disposed);
  CHECK(f.backend->all_processes_gone());
}
