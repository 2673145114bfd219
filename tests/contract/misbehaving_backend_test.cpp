// A backend that breaks the rules on purpose (ScriptedStep::misbehave_call_again): the
// service "guards what it can" (backend.hpp). A late duplicate completion must never reach
// a caller twice nor disturb a newer operation. Its own binary: a failure here may abort the
// process (the service's destructor check), which must not hide the other suites' results.
#include "contract_helpers.hpp"

using namespace contract;

TEST_CASE("misbehaving backend: a spawn completion called twice is not believed twice") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Error late = make_error(Code::BACKEND_FAILED, "late duplicate");
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::succeed().then_call_again(late, 2)));
  auto sp = f.spawn(o, f.options("n"));
  REQUIRE(sp.ok());
  std::string id = sp.result()->session.id;
  REQUIRE(f.run_until([&] { return f.backend->spawn_records()[0].completions == 2; }));
  f.turn();
  CHECK(sp.calls() == 1);
  CHECK(record_of(f.service, id)->state == RecordState::published);
  CHECK(f.service.read(o, id).ok());
  CHECK(f.kill(o, id).result().value());
  CHECK_FALSE(f.service.has_owner_activity(o));
}

TEST_CASE("misbehaving backend: a stale duplicate send completion never settles the next send") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto gate = f.gate();
  Error stale = make_error(Code::BACKEND_FAILED, "stale send completion");
  f.backend->session_script(id).sends.push(ScriptedSend::with(ScriptedStep::succeed().then_call_again(stale, 4)));
  f.backend->session_script(id).sends.push(ScriptedSend::with(ScriptedStep::gated(gate)));
  Capture<SendResult> first, second;
  std::shared_ptr<Send> next;
  REQUIRE(f.service.start_send(o, id, {}, first.cb([&](const Result<SendResult>&) {
    auto r = f.service.start_send(o, id, {}, second.cb());
    REQUIRE(r.ok());
    next = *r;
  })).ok());
  REQUIRE(f.run_until([&] { return first.done(); }));
  REQUIRE(f.run_until([&] { return f.backend->pending() == 1; }));  // the stale call ran
  f.turn();
  CHECK(first.calls() == 1);
  CHECK_FALSE(second.done());
  REQUIRE(next);
  CHECK_FALSE(next->settled());
  CHECK(record_of(f.service, id)->state == RecordState::sending);
  Capture<SendResult> third;
  auto busy = f.service.start_send(o, id, {}, third.cb());
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.error()->code == Code::SEND_ACTIVE);
  gate->open();
  REQUIRE(f.run_until([&] { return second.done(); }));
  CHECK(second.ok());
  CHECK(second.calls() == 1);
}

TEST_CASE("misbehaving backend: a duplicate signal completion reaches the caller once") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  f.backend->session_script(id).signals.push(
      ScriptedSignal::with(ScriptedStep::succeed().then_call_again(make_error(Code::BACKEND_FAILED), 2)));
  Capture<SignalResult> sig;
  REQUIRE(f.service.signal(o, id, Signal::sigint, sig.cb()).ok());
  REQUIRE(f.run_until([&] { return sig.done() && f.backend->pending() == 0; }));
  f.turn();
  CHECK(sig.calls() == 1);
  CHECK(sig.ok());
}

