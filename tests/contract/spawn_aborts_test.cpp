// Spawns aborted by the caller or by owner/service disposal (docs/contract.md, "Spawn"), with
// the backend settling late, failing, failing its cleanup, or the rollback close failing.
#include "contract_helpers.hpp"

using namespace contract;

namespace {

const char* const kRolledBack = "PTY spawn rolled back";

// A spawn the backend holds on a gate and that ignores its abort (so it returns a session
// the service must roll back).
struct HeldSpawn {
  Capture<SpawnResult> capture;
  std::string id;
  std::shared_ptr<ScriptedGate> gate;
};

HeldSpawn hold_spawn(Fixture& f, const Owner& o, SpawnOptions opts,
                     ScriptedAbortPolicy policy = ScriptedAbortPolicy::ignore,
                     ScriptedStep step = ScriptedStep::succeed(), Error abort_cleanup_error = {}) {
  HeldSpawn h;
  h.gate = f.gate();
  ScriptedSpawn script = ScriptedSpawn::with(step.on_gate(h.gate), policy);
  script.abort_cleanup_error = std::move(abort_cleanup_error);
  f.backend->spawns().push(script);
  std::size_t before = f.backend->spawn_records().size();
  h.capture = f.start_spawn(o, std::move(opts));
  REQUIRE(f.backend->spawn_records().size() == before + 1);
  h.id = f.backend->spawn_records().back().spec.session_id;
  return h;
}

const ScriptedSpawnRecord& spawn_record(Fixture& f, const std::string& id) {
  for (const auto& r : f.backend->spawn_records()) {
    if (r.spec.session_id == id) return r;
  }
  FAIL("no spawn record for " << id);
  throw 0;
}

}  // namespace

// 6.
TEST_CASE("spawn abort: owner disposal during a pending spawn: abort, wait, reject, roll back") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  HeldSpawn h = hold_spawn(f, o, f.options("n"));
  f.turn();
  const ScriptedSpawnRecord& rec = spawn_record(f, h.id);
  CHECK_FALSE(rec.spec.signal.aborted());

  bool closed_when_disposed = false;
  Capture<void> d;
  d.during([&] {
    f.service.dispose_owner(o, d.cb([&](const Status&) {
      const ScriptedSessionRecord* s = f.backend->session(h.id);
      closed_when_disposed = s && s->closed;
    }));
  });
  CHECK_FALSE(f.service.is_owner_live(o));
  f.turn();
  // The backend's signal aborted with OWNER_NOT_LIVE before the disposal completed.
  REQUIRE(rec.spec.signal.aborted());
  CHECK(rec.spec.signal.reason()->code == Code::OWNER_NOT_LIVE);
  CHECK(rec.aborted_while_pending);
  CHECK_FALSE(d.done());  // disposal waits for the backend to settle
  CHECK_FALSE(h.capture.done());
  CHECK(f.service.has_owner_activity(o));

  h.gate->open();
  REQUIRE(f.run_until([&] { return d.done() && h.capture.done(); }));
  CHECK_FALSE(d.inside());
  CHECK(h.capture.error()->code == Code::OWNER_NOT_LIVE);
  CHECK(d.ok());
  CHECK(closed_when_disposed);  // the rollback finished before the disposal completed
  const ScriptedSessionRecord* s = f.backend->session(h.id);
  REQUIRE(s);
  CHECK(s->close_reasons == std::vector<std::string>{kRolledBack});
  CHECK(s->destroyed);
  CHECK(f.backend->all_processes_gone());
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  CHECK(f.service.list(o).empty());
}

TEST_CASE("spawn abort: owner disposal during a pending spawn whose backend honours the abort") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Owner bystander = f.service.mint_owner("other");
  HeldSpawn h = hold_spawn(f, o, f.options("n"), ScriptedAbortPolicy::honour);
  HeldSpawn b = hold_spawn(f, bystander, f.options("n"));
  auto d = f.dispose_owner(o);
  REQUIRE(f.run_until([&] { return d.done() && h.capture.done(); }));
  CHECK(d.ok());
  CHECK(h.capture.error()->code == Code::OWNER_NOT_LIVE);
  CHECK(f.backend->session(h.id) == nullptr);  // nothing was created to roll back
  CHECK_FALSE(f.service.has_owner_activity(o));
  // Another owner's setup is not touched.
  CHECK_FALSE(spawn_record(f, b.id).spec.signal.aborted());
  CHECK_FALSE(b.capture.done());
  b.gate->open();
  REQUIRE(f.run_until([&] { return b.capture.done(); }));
  CHECK(b.capture.ok());
}

// 7.
TEST_CASE("spawn abort: service disposal during a pending spawn: SERVICE_DISPOSING, wait, roll back") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  HeldSpawn h = hold_spawn(f, o, f.options("n"));
  const ScriptedSpawnRecord& rec = spawn_record(f, h.id);
  auto d = f.dispose();
  CHECK(f.service.disposing());
  f.turn();
  REQUIRE(rec.spec.signal.aborted());
  CHECK(rec.spec.signal.reason()->code == Code::SERVICE_DISPOSING);
  CHECK_FALSE(d.done());
  CHECK_FALSE(h.capture.done());
  CHECK(f.service.has_owner_activity(o));
  h.gate->open();
  REQUIRE(f.run_until([&] { return d.done() && h.capture.done(); }));
  CHECK(h.capture.error()->code == Code::SERVICE_DISPOSING);
  CHECK(d.ok());
  CHECK(f.backend->session(h.id)->close_reasons == std::vector<std::string>{kRolledBack});
  CHECK(f.backend->session(h.id)->closed);
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  CHECK(f.spawn(o, f.options()).error()->code == Code::SERVICE_DISPOSING);
}

// 8.
TEST_CASE("spawn abort: caller aborts, the backend then resolves: exact reason, rollback, spawn again") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  AbortController caller;
  HeldSpawn h = hold_spawn(f, o, f.options("n", caller.signal()));
  const ScriptedSpawnRecord& rec = spawn_record(f, h.id);
  Error reason = make_error(Code::ABORTED, "the user pressed escape");
  caller.abort(reason);
  CHECK_FALSE(h.capture.done());  // never inside abort()
  REQUIRE(rec.spec.signal.aborted());
  CHECK(rec.spec.signal.reason() == reason);  // the backend sees the caller's exact reason
  f.turn();
  // The contract: the backend completes, then the service rolls back, then the spawn rejects.
  CHECK_FALSE(h.capture.done());
  CHECK(f.service.has_owner_activity(o));
  h.gate->open();
  REQUIRE(f.run_until([&] { return h.capture.done(); }));
  CHECK(h.capture.error() == reason);
  CHECK(f.backend->session(h.id)->close_reasons == std::vector<std::string>{kRolledBack});
  CHECK(f.backend->session(h.id)->closed);  // rolled back before the spawn completed
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.list(o).empty());
  CHECK(f.service.is_owner_live(o));
  // The name was released.
  std::string again = f.spawn_ok(o, "n");
  CHECK(again != h.id);
  f.turn();
  CHECK(h.capture.calls() == 1);
}

TEST_CASE("spawn abort: caller aborts and the backend honours it: exact reason, nothing left") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  AbortController caller;
  HeldSpawn h = hold_spawn(f, o, f.options("n", caller.signal()), ScriptedAbortPolicy::honour);
  Error reason = make_error(Code::ABORTED, "stop");
  caller.abort(reason);
  REQUIRE(f.run_until([&] { return h.capture.done(); }));
  CHECK(h.capture.error() == reason);
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  f.spawn_ok(o, "n");
}

// 9.
TEST_CASE("spawn abort: caller aborts and the rollback close fails: caller's reason; activity until dispose") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  AbortController caller;
  HeldSpawn h = hold_spawn(f, o, f.options("n", caller.signal()));
  Error close_failed = make_error(Code::BACKEND_FAILED, "tree would not die");
  f.backend->session_script(h.id).closes.set_default(ScriptedStep::fail(close_failed));
  Error reason = make_error(Code::ABORTED, "stop");
  caller.abort(reason);
  h.gate->open();
  REQUIRE(f.run_until([&] { return h.capture.done(); }));
  CHECK(h.capture.error() == reason);
  CHECK(f.backend->session(h.id)->close_reasons.at(0) == kRolledBack);
  CHECK_FALSE(f.backend->session(h.id)->closed);

  f.turn();
  CHECK(f.service.has_owner_activity(o));
  auto view = record_of(f.service, h.id);
  REQUIRE(view);
  CHECK(view->state == RecordState::cleanup_failed);
  CHECK_FALSE(view->published);
  CHECK(contains_error(view->cleanup_error, close_failed));
  CHECK(f.service.list(o).empty());
  // Its id was never published: fencing knows nothing of it.
  CHECK(f.service.read(o, h.id).error()->code == Code::NO_SESSION);

  auto d = f.dispose();
  REQUIRE(f.run_until([&] { return d.done(); }));
  Error e = d.error();
  CHECK(e->code == Code::CLEANUP_FAILED);
  CHECK(e->message == "failed to clean up PTY lifecycle");
  CHECK(contains_message(e, "failed to roll back unpublished PTY setup"));
  CHECK(contains_error(e, close_failed));
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  CHECK(f.backend->session(h.id)->destroyed);
}

// 10.
TEST_CASE("spawn abort: the backend rejects with its own error after a caller abort: caller's reason") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  AbortController caller;
  Error own = make_error(Code::BACKEND_FAILED, "exec failed");
  HeldSpawn h = hold_spawn(f, o, f.options("n", caller.signal()), ScriptedAbortPolicy::ignore,
                           ScriptedStep::fail(own));
  Error reason = make_error(Code::ABORTED, "stop");
  caller.abort(reason);
  h.gate->open();
  REQUIRE(f.run_until([&] { return h.capture.done(); }));
  CHECK(h.capture.error() == reason);
  CHECK(spawn_record(f, h.id).error == own);
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  f.spawn_ok(o, "n");
}

// 11.
static void cleanup_error_after_caller_abort(bool whole_service) {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  AbortController caller;
  Error cleanup = make_error(Code::BACKEND_FAILED, "left a zombie");
  HeldSpawn h = hold_spawn(f, o, f.options("n", caller.signal()),
                           ScriptedAbortPolicy::honour_cleanup_fails, ScriptedStep::succeed(),
                           cleanup);
  Error reason = make_error(Code::ABORTED, "stop");
  caller.abort(reason);
  REQUIRE(f.run_until([&] { return h.capture.done(); }));
  CHECK(h.capture.error() == reason);
  Error backend_error = spawn_record(f, h.id).error;
  REQUIRE(is_backend_cleanup_error(backend_error));
  CHECK(backend_error->errors[0] == reason);
  CHECK(backend_error->errors[1] == cleanup);

  f.turn();
  CHECK(f.service.has_owner_activity(o));
  auto view = record_of(f.service, h.id);
  REQUIRE(view);
  CHECK(view->state == RecordState::cleanup_failed);
  CHECK_FALSE(view->published);
  CHECK(f.service.list(o).empty());
  // The owner goes on working meanwhile.
  f.spawn_ok(o, "other");

  Capture<void> d = whole_service ? f.dispose() : f.dispose_owner(o);
  REQUIRE(f.run_until([&] { return d.done(); }));
  Error e = d.error();
  CHECK(e->code == Code::CLEANUP_FAILED);
  CHECK(e->message == "failed to clean up PTY lifecycle");
  CHECK(contains_error(e, cleanup));  // the cleanup failure, nested
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK_FALSE(record_of(f.service, h.id).has_value());
}

TEST_CASE("spawn abort: a BackendCleanupError after a caller abort: retained until dispose_owner reports it") {
  cleanup_error_after_caller_abort(false);
}

TEST_CASE("spawn abort: a BackendCleanupError after a caller abort: retained until dispose reports it") {
  cleanup_error_after_caller_abort(true);
}

TEST_CASE("spawn abort: a BackendCleanupError without any abort: the backend's error, retained") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Error cleanup = make_error(Code::BACKEND_FAILED, "fd leak");
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail_cleanup({}, cleanup)));
  auto r = f.spawn(o, f.options("n"));
  REQUIRE_FALSE(r.ok());
  Error backend_error = f.backend->spawn_records().back().error;
  CHECK(r.error() == backend_error);
  CHECK(f.service.has_owner_activity(o));
  auto d = f.dispose_owner(o);
  REQUIRE(f.run_until([&] { return d.done(); }));
  CHECK(contains_error(d.error(), cleanup));
  CHECK_FALSE(f.service.has_owner_activity(o));
  // A second disposal of the same owner has nothing left to report.
  auto again = f.dispose_owner(o);
  REQUIRE(f.run_until([&] { return again.done(); }));
  CHECK(again.ok());
}

// 12.
TEST_CASE("spawn abort: disposal during a spawn whose rollback fails: both reject") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  HeldSpawn h = hold_spawn(f, o, f.options("n"));
  Error close_failed = make_error(Code::BACKEND_FAILED, "tree would not die");
  f.backend->session_script(h.id).closes.set_default(ScriptedStep::fail(close_failed));
  auto d = f.dispose_owner(o);
  f.turn();
  h.gate->open();
  REQUIRE(f.run_until([&] { return d.done() && h.capture.done(); }));
  Error spawn_error = h.capture.error();
  CHECK(spawn_error->message == "PTY spawn and rollback both failed");
  CHECK(contains_error(spawn_error, close_failed));
  bool has_owner_reason = false;
  for (const Error& child : spawn_error->errors) {
    if (child->code == Code::OWNER_NOT_LIVE) has_owner_reason = true;
  }
  CHECK(has_owner_reason);
  Error e = d.error();
  CHECK(e->message == "failed to clean up PTY lifecycle");
  CHECK(contains_error(e, close_failed));
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
}

// 13.
TEST_CASE("spawn abort: the backend completes with a cleanup error while disposal aborts it") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  HeldSpawn h = hold_spawn(f, o, f.options("n"), ScriptedAbortPolicy::honour_cleanup_fails);
  auto d = f.dispose_owner(o);
  REQUIRE(f.run_until([&] { return d.done() && h.capture.done(); }));
  CHECK(h.capture.error()->code == Code::OWNER_NOT_LIVE);  // the service's abort reason
  Error backend_error = spawn_record(f, h.id).error;
  REQUIRE(is_backend_cleanup_error(backend_error));
  Error e = d.error();
  CHECK(e->code == Code::CLEANUP_FAILED);
  CHECK(contains_error(e, backend_error->errors[1]));
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
}

// 14.
namespace {
// Runs `during` inside spawn(), before handing the spawn on: "disposed inside the backend".
class InterceptingBackend final : public Backend {
 public:
  InterceptingBackend(std::shared_ptr<ScriptedBackend> inner, std::function<void()> during)
      : inner_(std::move(inner)), during_(std::move(during)) {}
  const std::string& type() const override { return type_; }
  void spawn(SpawnSpec spec, SpawnCallback done) override {
    if (during_) std::exchange(during_, nullptr)();
    inner_->spawn(std::move(spec), std::move(done));
  }

 private:
  std::string type_ = "intercepting";
  std::shared_ptr<ScriptedBackend> inner_;
  std::function<void()> during_;
};
}  // namespace

TEST_CASE("spawn abort: owner disposed inside the backend's spawn, and the returned session's close fails") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Capture<void> d;
  auto wrapper = std::make_shared<InterceptingBackend>(f.backend, [&] {
    f.service.dispose_owner(o, d.cb());
  });
  REQUIRE(f.service.register_backend(wrapper).ok());
  Error close_failed = make_error(Code::BACKEND_FAILED, "tree would not die");
  f.backend->every_session().closes.set_default(ScriptedStep::fail(close_failed));
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::succeed(), ScriptedAbortPolicy::ignore));
  auto sp = f.start_spawn(o, f.options("n", {}, "intercepting"));
  CHECK_FALSE(d.done());
  REQUIRE(f.backend->spawn_records().size() == 1);
  const ScriptedSpawnRecord& rec = f.backend->spawn_records()[0];
  CHECK(rec.spec.signal.aborted());
  CHECK(rec.spec.signal.reason()->code == Code::OWNER_NOT_LIVE);
  REQUIRE(f.run_until([&] { return d.done() && sp.done(); }));
  CHECK(sp.error()->message == "PTY spawn and rollback both failed");
  CHECK(contains_error(sp.error(), close_failed));
  CHECK(d.error()->message == "failed to clean up PTY lifecycle");
  CHECK(contains_error(d.error(), close_failed));
  CHECK(f.backend->session(rec.spec.session_id)->close_reasons.at(0) == kRolledBack);
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  f.backend->every_session().closes.fallback.reset();
}

TEST_CASE("spawn abort: owner disposed inside the backend's spawn, backend honours: clean rejection") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Capture<void> d;
  auto wrapper = std::make_shared<InterceptingBackend>(f.backend, [&] {
    f.service.dispose_owner(o, d.cb());
  });
  REQUIRE(f.service.register_backend(wrapper).ok());
  auto sp = f.start_spawn(o, f.options("n", {}, "intercepting"));
  REQUIRE(f.run_until([&] { return d.done() && sp.done(); }));
  CHECK(sp.error()->code == Code::OWNER_NOT_LIVE);
  CHECK(d.ok());
  CHECK(f.backend->spawn_records()[0].aborted_at_start);
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
}

TEST_CASE("spawn abort: aborting the caller's signal after publication changes nothing") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  AbortController caller;
  auto sp = f.spawn(o, f.options("n", caller.signal()));
  REQUIRE(sp.ok());
  caller.abort(make_error(Code::ABORTED));
  f.turn();
  std::string id = sp.result()->session.id;
  CHECK(f.backend->session(id)->close_reasons.empty());
  CHECK(record_of(f.service, id)->state == RecordState::published);
  CHECK(f.service.read(o, id).ok());
}

TEST_CASE("spawn abort: caller abort and owner disposal together: the caller's exact reason wins") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  auto gate = f.gate();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate), ScriptedAbortPolicy::ignore));
  AbortController caller;
  auto sp = f.start_spawn(o, f.options("n", caller.signal()));
  std::string id = f.backend->spawn_records()[0].spec.session_id;
  Error reason = make_error(Code::ABORTED, "mine");
  caller.abort(reason);
  auto d = f.dispose_owner(o);
  gate->open();
  REQUIRE(f.run_until([&] { return sp.done() && d.done(); }));
  CHECK(sp.error() == reason);
  CHECK(d.ok());
  CHECK(f.backend->session(id)->close_reasons == std::vector<std::string>{"PTY spawn rolled back"});

  // And the other way round: disposal first, then the caller: the caller's reason still.
  Owner p = f.service.mint_owner("p");
  auto gate2 = f.gate();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate2), ScriptedAbortPolicy::ignore));
  AbortController caller2;
  auto sp2 = f.start_spawn(p, f.options("n", caller2.signal()));
  auto d2 = f.dispose_owner(p);
  Error reason2 = make_error(Code::ABORTED, "mine too");
  caller2.abort(reason2);
  gate2->open();
  REQUIRE(f.run_until([&] { return sp2.done() && d2.done(); }));
  // The backend's signal fired with the service's reason first; the caller did abort,
  // and the contract says the caller's exact reason wins whenever the caller aborted.
  CHECK(sp2.error() == reason2);
  CHECK(d2.ok());
}
