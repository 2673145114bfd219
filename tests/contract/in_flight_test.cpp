// Operations in flight across a close: the service destroys the BackendSession after a
// successful close, and a backend never calls back after that (backend.hpp). So whatever the
// caller started before the close (a signal) must still hear exactly once. Its own binary: a
// failure here ends in the service's destructor check, which aborts the process.
#include "contract_helpers.hpp"

using namespace contract;

TEST_CASE("signal: one in flight when the session closes still completes exactly once") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto gate = f.gate();
  f.backend->session_script(id).signals.push(ScriptedSignal::with(ScriptedStep::gated(gate)));
  Capture<SignalResult> sig;
  REQUIRE(f.service.signal(o, id, Signal::sigterm, sig.cb()).ok());
  auto k = f.kill(o, id);
  CHECK(k.result().value());
  // Either the close waited for the signal or the caller learns it will never land; it
  // must hear exactly once, and never from a destroyed backend session.
  REQUIRE(f.run_until([&] { return sig.done(); }));
  gate->open();
  f.turn();
  CHECK(sig.calls() == 1);
  CHECK_FALSE(sig.inside());
}

TEST_CASE("signal: one in flight when the owner is disposed still completes exactly once") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto gate = f.gate();
  f.backend->session_script(id).signals.push(ScriptedSignal::with(ScriptedStep::gated(gate)));
  Capture<SignalResult> sig;
  REQUIRE(f.service.signal(o, id, Signal::sigint, sig.cb()).ok());
  auto d = f.dispose_owner(o);
  REQUIRE(f.run_until([&] { return d.done(); }));
  REQUIRE(f.run_until([&] { return sig.done(); }));
  gate->open();
  f.turn();
  CHECK(sig.calls() == 1);
}
