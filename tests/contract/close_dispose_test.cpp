// Close and disposal (docs/contract.md, "Close and kill", "Owner disposal", "Service
// disposal"): kill and its close fence, joins, failures and retries; owner and service
// disposal, also racing a kill in flight or each other.
#include <algorithm>

#include "contract_helpers.hpp"

using namespace contract;

namespace {
// True when `seq` appears in `all` in order (other items may sit between).
bool in_order(const std::vector<std::string>& all, const std::vector<std::string>& seq) {
  auto it = all.begin();
  for (const auto& want : seq) {
    it = std::find(it, all.end(), want);
    if (it == all.end()) return false;
    ++it;
  }
  return true;
}
}  // namespace

// 15.
TEST_CASE("kill: a close that fails: error, still listed as cleanup_failed, a retry succeeds") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o, "n");
  Error failed = make_error(Code::BACKEND_FAILED, "close failed");
  f.backend->session_script(id).closes.push(ScriptedStep::fail(failed));

  auto k1 = f.kill(o, id);
  REQUIRE_FALSE(k1.ok());
  CHECK(contains_error(k1.error(), failed));
  CHECK_FALSE(k1.inside());
  CHECK(ids_of(f.service.list(o)) == std::vector<std::string>{id});
  auto view = record_of(f.service, id);
  REQUIRE(view);
  CHECK(view->state == RecordState::cleanup_failed);
  CHECK(view->published);
  CHECK(f.service.has_owner_activity(o));
  CHECK_FALSE(f.backend->session(id)->closed);
  CHECK_FALSE(f.backend->session(id)->destroyed);
  // The name stays taken while the session is listed.
  CHECK(f.spawn(o, f.options("n")).error()->code == Code::DUPLICATE_NAME);

  auto k2 = f.kill(o, id, "retry");
  REQUIRE(k2.ok());
  CHECK(k2.result().value() == true);
  CHECK(f.backend->session(id)->close_reasons == std::vector<std::string>{"model request", "retry"});
  CHECK(f.backend->session(id)->close_attempts == 2);
  CHECK(f.service.read(o, id).error()->code == Code::NO_SESSION);
  CHECK(f.service.list(o).empty());
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.backend->session(id)->destroyed);
  CHECK(f.backend->all_processes_gone());
  f.turn();
  CHECK(k1.calls() == 1);
  CHECK(k2.calls() == 1);
}

TEST_CASE("kill: a stale failing attempt never clears a newer attempt's fence") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto gate = f.gate();
  Error first_failure = make_error(Code::BACKEND_FAILED, "attempt 1 failed");
  Error stale = make_error(Code::BACKEND_FAILED, "attempt 1, called again late");
  // Attempt 1 fails, and (misbehaving) calls its completion again 5 turns later, while
  // attempt 2 is held on a gate.
  f.backend->session_script(id).closes.push(ScriptedStep::fail(first_failure).then_call_again(stale, 5));
  f.backend->session_script(id).closes.push(ScriptedStep::gated(gate));

  Capture<bool> k1, k2, k3;
  Status started = f.service.kill(o, id, k1.cb([&](const Result<bool>&) {
    // Retry at once, from inside the failure's completion, so attempt 2 is surely in flight
    // before the stale call arrives.
    Status retry = f.service.kill(o, id, k2.cb(), "retry");
    CHECK(retry.ok());
  }));
  REQUIRE(started.ok());
  REQUIRE(f.run_until([&] { return k1.done(); }));
  REQUIRE_FALSE(k1.ok());
  CHECK(k1.error() != stale);
  // Let the stale completion arrive: only the gated attempt 2 is left in the backend.
  REQUIRE(f.run_until([&] { return f.backend->pending() == 1; }));
  f.turn();
  CHECK(k1.calls() == 1);  // the stale call reached no caller twice
  CHECK_FALSE(k2.done());
  auto view = record_of(f.service, id);
  REQUIRE(view);
  CHECK(view->state == RecordState::closing);  // attempt 2's fence still stands

  // A third kill joins attempt 2 rather than starting attempt 3.
  Status joined = f.service.kill(o, id, k3.cb(), "third");
  REQUIRE(joined.ok());
  Capture<SendResult> send;
  auto refused = f.service.start_send(o, id, {}, send.cb());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error()->code == Code::SESSION_CLOSING);
  f.turn();
  CHECK(f.backend->session(id)->close_attempts == 2);
  gate->open();
  REQUIRE(f.run_until([&] { return k2.done() && k3.done(); }));
  REQUIRE(k2.ok());
  REQUIRE(k3.ok());
  CHECK(k2.result().value() == true);
  CHECK(k3.result().value() == false);
  CHECK(f.service.read(o, id).error()->code == Code::NO_SESSION);
  CHECK_FALSE(f.service.has_owner_activity(o));
}

// 16.
TEST_CASE("kill: while a close is in flight sends fail closing, a second kill joins, then NO_SESSION") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto gate = f.gate();
  f.backend->session_script(id).closes.push(ScriptedStep::gated(gate));
  Capture<bool> first, second;
  REQUIRE(first.during([&] { return f.service.kill(o, id, first.cb(), "first"); }).ok());
  REQUIRE(second.during([&] { return f.service.kill(o, id, second.cb(), "second"); }).ok());
  f.turn();
  CHECK_FALSE(first.done());
  CHECK_FALSE(second.done());
  CHECK(record_of(f.service, id)->state == RecordState::closing);
  CHECK(f.service.has_owner_activity(o));
  CHECK(ids_of(f.service.list(o)) == std::vector<std::string>{id});  // listed until closed

  Capture<SendResult> send;
  auto refused = f.service.start_send(o, id, {}, send.cb());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error()->code == Code::SESSION_CLOSING);
  CHECK(refused.error()->message.find("closing") != std::string::npos);

  gate->open();
  REQUIRE(f.run_until([&] { return first.done() && second.done(); }));
  CHECK_FALSE(first.inside());
  CHECK_FALSE(second.inside());
  CHECK(first.result().value() == true);
  CHECK(second.result().value() == false);
  CHECK(f.backend->session(id)->close_attempts == 1);
  CHECK(f.backend->session(id)->close_reasons.at(0) == "first");
  CHECK(f.service.read(o, id).error()->code == Code::NO_SESSION);
  Capture<bool> late;
  CHECK(f.service.kill(o, id, late.cb()).error()->code == Code::NO_SESSION);
  CHECK_FALSE(f.service.has_owner_activity(o));
  f.turn();
  CHECK(first.calls() == 1);
  CHECK(second.calls() == 1);
  CHECK(late.calls() == 0);
  CHECK(send.calls() == 0);
}

// 17.
TEST_CASE("disposal: owner and service disposal close with their reasons; then SERVICE_DISPOSING") {
  Fixture f;
  Owner a = f.service.mint_owner("a");
  Owner b = f.service.mint_owner("b");
  std::string a1 = f.spawn_ok(a, "x");
  std::string a2 = f.spawn_ok(a);
  std::string b1 = f.spawn_ok(b, "x");
  // A live send on a1: disposal settles it too.
  f.backend->session_script(a1).sends.push(ScriptedSend::with(ScriptedStep::gated(f.gate())));
  Capture<SendResult> live;
  REQUIRE(f.service.start_send(a, a1, {}, live.cb()).ok());

  auto da = f.dispose_owner(a);
  auto da2 = f.dispose_owner(a);  // joins the one in flight
  REQUIRE(f.run_until([&] { return da.done() && da2.done(); }));
  CHECK(da.ok());
  CHECK(da2.ok());
  CHECK(live.calls() == 1);
  for (const auto& id : {a1, a2}) {
    CHECK(f.backend->session(id)->close_reasons == std::vector<std::string>{"PTY owner disposed"});
    CHECK(f.backend->session(id)->closed);
  }
  CHECK(f.backend->session(a1)->close_attempts == 1);
  CHECK_FALSE(f.service.is_owner_live(a));
  CHECK_FALSE(f.service.has_owner_activity(a));
  CHECK(f.service.list(a).empty());
  CHECK(f.backend->session(b1)->close_reasons.empty());
  CHECK(f.service.is_owner_live(b));
  CHECK(f.spawn(a, f.options()).error()->code == Code::OWNER_NOT_LIVE);
  // Disposing an already disposed owner succeeds; one never minted here does not.
  auto again = f.dispose_owner(a);
  REQUIRE(f.run_until([&] { return again.done(); }));
  CHECK(again.ok());
  Loop l2;
  Owner stranger;
  {
    Service other(l2.loop);
    stranger = other.mint_owner("s");
  }
  auto strange = f.dispose_owner(stranger);
  REQUIRE(f.run_until([&] { return strange.done(); }));
  CHECK(strange.error()->code == Code::OWNER_NOT_LIVE);
  auto none = f.dispose_owner(Owner{});
  REQUIRE(f.run_until([&] { return none.done(); }));
  CHECK(none.error()->code == Code::OWNER_NOT_LIVE);

  auto d = f.dispose();
  auto d2 = f.dispose();  // joins
  CHECK(f.service.disposing());
  REQUIRE(f.run_until([&] { return d.done() && d2.done(); }));
  CHECK(d.ok());
  CHECK(d2.ok());
  CHECK(f.backend->session(b1)->close_reasons == std::vector<std::string>{"PTY service disposed"});
  CHECK_FALSE(f.service.is_owner_live(b));
  CHECK(f.service.records().empty());
  CHECK(f.service.backend_types().empty());
  CHECK(f.backend->all_processes_gone());
  CHECK(f.backend->live_sessions() == 0);
  CHECK(f.spawn(b, f.options()).error()->code == Code::SERVICE_DISPOSING);
  Owner late = f.service.mint_owner("late");
  CHECK_FALSE(f.service.is_owner_live(late));
  CHECK(f.spawn(late, f.options()).error()->code == Code::SERVICE_DISPOSING);
  auto d3 = f.dispose();  // after completion: succeeds, still from the loop
  REQUIRE(f.run_until([&] { return d3.done(); }));
  CHECK(d3.ok());
}

// 18.
TEST_CASE("kill: two concurrent closes of a failing record: both fail, one backend close, retry works") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto gate = f.gate();
  Error failed = make_error(Code::BACKEND_FAILED, "close failed");
  f.backend->session_script(id).closes.push(ScriptedStep::fail(failed).on_gate(gate));
  Capture<bool> k1, k2;
  REQUIRE(f.service.kill(o, id, k1.cb(), "first").ok());
  REQUIRE(f.service.kill(o, id, k2.cb(), "second").ok());
  gate->open();
  REQUIRE(f.run_until([&] { return k1.done() && k2.done(); }));
  CHECK(contains_error(k1.error(), failed));
  CHECK(contains_error(k2.error(), failed));
  CHECK(f.backend->session(id)->close_attempts == 1);
  CHECK(record_of(f.service, id)->state == RecordState::cleanup_failed);
  auto k3 = f.kill(o, id, "third");
  CHECK(k3.result().value() == true);
  CHECK(f.backend->session(id)->close_attempts == 2);
  const auto& reasons = f.backend->session(id)->close_reasons;
  CHECK(reasons.front() == "first");
  CHECK(reasons.back() == "third");
  CHECK(in_order({"first", "second", "third"}, reasons));
  CHECK(f.service.read(o, id).error()->code == Code::NO_SESSION);
}

// 19.
TEST_CASE("disposal: dispose with a failing close still clears backends, reservations and owners") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o, "n");
  std::string fine = f.spawn_ok(o, "m");
  Error failed = make_error(Code::BACKEND_FAILED, "close failed");
  f.backend->session_script(id).closes.set_default(ScriptedStep::fail(failed));
  auto d = f.dispose();
  REQUIRE(f.run_until([&] { return d.done(); }));
  Error e = d.error();
  CHECK(e->code == Code::CLEANUP_FAILED);
  CHECK(e->message == "failed to clean up PTY lifecycle");
  CHECK(contains_message(e, "failed to close 1 PTY session(s)"));
  CHECK(contains_error(e, failed));
  CHECK(f.service.backend_types().empty());
  CHECK(f.service.records().empty());
  CHECK_FALSE(f.service.is_owner_live(o));
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.list(o).empty());
  // The failed session was consumed: destroyed without proof, its processes killed.
  CHECK(f.backend->session(id)->destroyed);
  CHECK_FALSE(f.backend->session(id)->killed_on_destroy.empty());
  CHECK(f.backend->session(fine)->closed);
  CHECK(f.backend->live_sessions() == 0);
  CHECK(f.spawn(o, f.options("n")).error()->code == Code::SERVICE_DISPOSING);
  auto reg = f.service.register_backend(std::make_shared<ScriptedBackend>(f.loop, "again"));
  CHECK(reg.error()->code == Code::SERVICE_DISPOSING);
  CHECK_FALSE(f.registration.unregister());
  auto d2 = f.dispose();
  REQUIRE(f.run_until([&] { return d2.done(); }));
  CHECK(d2.ok());  // the failure was consumed by the first
}

TEST_CASE("disposal: dispose_owner with a failing close reports it and consumes it") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o, "n");
  f.spawn_ok(o);
  Error failed = make_error(Code::BACKEND_FAILED, "close failed");
  f.backend->session_script(id).closes.set_default(ScriptedStep::fail(failed));
  auto d = f.dispose_owner(o);
  REQUIRE(f.run_until([&] { return d.done(); }));
  CHECK(d.error()->message == "failed to clean up PTY lifecycle");
  CHECK(contains_message(d.error(), "failed to close 1 PTY session(s)"));
  CHECK(contains_error(d.error(), failed));
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  CHECK(f.backend->session(id)->destroyed);
  // The service goes on for everyone else.
  Owner next = f.service.mint_owner("next");
  f.spawn_ok(next, "n");
}

TEST_CASE("disposal: owner disposal joins a failing kill already in flight and reports its failure") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto gate = f.gate();
  Error failed = make_error(Code::BACKEND_FAILED, "close failed");
  f.backend->session_script(id).closes.push(ScriptedStep::fail(failed).on_gate(gate));
  f.backend->session_script(id).closes.set_default(ScriptedStep::fail(failed));
  Capture<bool> k;
  REQUIRE(f.service.kill(o, id, k.cb()).ok());
  auto d = f.dispose_owner(o);
  f.turn();
  CHECK_FALSE(d.done());  // waits for the close in flight
  gate->open();
  REQUIRE(f.run_until([&] { return k.done() && d.done(); }));
  CHECK(contains_error(k.error(), failed));
  CHECK(d.error()->message == "failed to clean up PTY lifecycle");
  CHECK(contains_error(d.error(), failed));
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  CHECK(f.backend->session(id)->destroyed);
}

TEST_CASE("disposal: owner disposal joins a kill in flight that succeeds") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto gate = f.gate();
  f.backend->session_script(id).closes.push(ScriptedStep::gated(gate));
  Capture<bool> k;
  REQUIRE(f.service.kill(o, id, k.cb()).ok());
  auto d = f.dispose_owner(o);
  f.turn();
  CHECK_FALSE(d.done());
  gate->open();
  REQUIRE(f.run_until([&] { return k.done() && d.done(); }));
  CHECK(k.result().value() == true);
  CHECK(d.ok());
  CHECK(f.backend->session(id)->close_attempts == 1);
  CHECK_FALSE(f.service.has_owner_activity(o));
}

TEST_CASE("disposal: disposing an owner whose published session is cleanup_failed ends its activity") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  f.backend->session_script(id).closes.push(ScriptedStep::fail());
  auto k = f.kill(o, id);
  REQUIRE_FALSE(k.ok());
  CHECK(f.service.has_owner_activity(o));
  auto d = f.dispose_owner(o);
  REQUIRE(f.run_until([&] { return d.done(); }));
  // Whether the disposal retried the close (default success now) or reported the retained
  // failure, afterwards nothing of the owner is left.
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  const ScriptedSessionRecord* s = f.backend->session(id);
  CHECK(s->destroyed);
  if (d.ok()) {
    CHECK(s->closed);
    CHECK(s->close_reasons.back() == "PTY owner disposed");
  }
}

TEST_CASE("disposal: a service disposal during an owner disposal: both complete") {
  Fixture f;
  Owner a = f.service.mint_owner("a");
  Owner b = f.service.mint_owner("b");
  std::string ida = f.spawn_ok(a);
  std::string idb = f.spawn_ok(b);
  auto gate = f.gate();
  f.backend->session_script(ida).closes.push(ScriptedStep::gated(gate));
  auto da = f.dispose_owner(a);
  auto d = f.dispose();
  f.turn();
  CHECK_FALSE(da.done());
  CHECK_FALSE(d.done());
  gate->open();
  REQUIRE(f.run_until([&] { return da.done() && d.done(); }));
  CHECK(da.ok());
  CHECK(d.ok());
  CHECK(f.backend->session(ida)->close_reasons == std::vector<std::string>{"PTY owner disposed"});
  CHECK(f.backend->session(idb)->close_reasons == std::vector<std::string>{"PTY service disposed"});
  CHECK(f.service.records().empty());
}
