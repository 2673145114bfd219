// The backend registry, publication, the spawn check order, and ids and table order
// (docs/contract.md, "Backends", "Spawn").
#include <set>

#include "contract_helpers.hpp"

using namespace contract;

// 1.
TEST_CASE("registry: duplicate and empty types, stale handles, order, unregister keeps sessions") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o, "keep");

  auto dup = f.service.register_backend(std::make_shared<ScriptedBackend>(f.loop, "scripted"));
  REQUIRE_FALSE(dup.ok());
  CHECK(dup.error()->code == Code::DUPLICATE_BACKEND);
  auto empty = f.service.register_backend(std::make_shared<ScriptedBackend>(f.loop, ""));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error()->code == Code::INVALID_ARGUMENT);
  auto null = f.service.register_backend(nullptr);
  REQUIRE_FALSE(null.ok());
  CHECK(null.error()->code == Code::INVALID_ARGUMENT);

  auto b = std::make_shared<ScriptedBackend>(f.loop, "b");
  auto a = std::make_shared<ScriptedBackend>(f.loop, "a");
  auto c = std::make_shared<ScriptedBackend>(f.loop, "c");
  auto rb = f.service.register_backend(b);
  auto ra = f.service.register_backend(a);
  auto rc = f.service.register_backend(c);
  REQUIRE(rb.ok());
  REQUIRE(ra.ok());
  REQUIRE(rc.ok());
  CHECK(f.service.backend_types() == std::vector<std::string>{"scripted", "b", "a", "c"});

  // A stale handle cannot remove a replacement.
  CHECK(ra->unregister());
  CHECK_FALSE(ra->unregister());
  auto a2 = std::make_shared<ScriptedBackend>(f.loop, "a");
  auto ra2 = f.service.register_backend(a2);
  REQUIRE(ra2.ok());
  CHECK_FALSE(ra->unregister());
  CHECK(f.service.backend_types() == std::vector<std::string>{"scripted", "b", "c", "a"});
  CHECK(f.spawn(o, f.options(std::nullopt, {}, "a")).ok());
  CHECK(a->spawn_records().empty());
  CHECK(a2->spawn_records().size() == 1);

  // Unregistering leaves published sessions working, and spawns of the type fail.
  CHECK(f.registration.unregister());
  CHECK(f.service.backend_types() == std::vector<std::string>{"b", "c", "a"});
  auto page = f.service.read(o, id);
  CHECK(page.ok());
  Capture<SignalResult> sig;
  CHECK(f.service.signal(o, id, Signal::sigint, sig.cb()).ok());
  Capture<SendResult> sent;
  auto send = f.service.start_send(o, id, {}, sent.cb());
  REQUIRE(send.ok());
  REQUIRE(f.run_until([&] { return sig.done() && sent.done(); }));
  CHECK(sig.ok());
  CHECK(sent.ok());
  auto nob = f.spawn(o, f.options());
  CHECK(nob.error()->code == Code::NO_BACKEND);
  CHECK(f.kill(o, id).result().value() == true);
  CHECK(f.backend->session(id)->closed);
  CHECK(f.backend->session(id)->destroyed);

  // After disposal, registration fails; a handle outliving its service is harmless.
  BackendRegistration survivor;
  {
    Loop l2;
    auto other = std::make_unique<Service>(l2.loop);
    auto r = other->register_backend(std::make_shared<ScriptedBackend>(l2.loop, "x"));
    REQUIRE(r.ok());
    survivor = *r;
    Capture<void> d;
    other->dispose(d.cb());
    REQUIRE(run_until(l2.loop, [&] { return d.done(); }));
    CHECK(d.ok());
    CHECK(other->backend_types().empty());
    auto late = other->register_backend(std::make_shared<ScriptedBackend>(l2.loop, "y"));
    REQUIRE_FALSE(late.ok());
    CHECK(late.error()->code == Code::SERVICE_DISPOSING);
    other.reset();
  }
  CHECK_FALSE(survivor.unregister());
}

// 2.
TEST_CASE("spawn: publishes only after the backend completes; snapshot fields; list per owner") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Owner other = f.service.mint_owner("agent");  // same label, different owner
  CHECK_FALSE(o == other);
  auto gate = f.gate();
  ScriptedSpawn gated = ScriptedSpawn::with(ScriptedStep::gated(gate));
  gated.session.motd = "welcome\n";
  gated.session.pid = 31337;
  f.backend->spawns().push(gated);

  SpawnOptions opts = f.options("first");
  opts.cwd = "/tmp";
  opts.options = {{"shell", "/bin/sh"}};
  CHECK_FALSE(f.service.has_owner_activity(o));
  auto first = f.start_spawn(o, opts);
  CHECK(f.service.has_owner_activity(o));  // from the call on, before the backend runs
  f.turn();
  CHECK_FALSE(first.done());
  CHECK(f.service.list(o).empty());
  CHECK(f.service.has_owner_activity(o));
  REQUIRE(f.backend->spawn_records().size() == 1);
  const SpawnSpec& spec = f.backend->spawn_records()[0].spec;
  CHECK(spec.owner == o);
  CHECK(spec.request.name == "first");
  CHECK(spec.request.cwd == "/tmp");
  CHECK(spec.request.options == std::map<std::string, std::string>{{"shell", "/bin/sh"}});
  CHECK_FALSE(spec.signal.aborted());
  auto setup = record_of(f.service, spec.session_id);
  REQUIRE(setup);
  CHECK(setup->state == RecordState::setup);
  CHECK_FALSE(setup->published);
  CHECK(setup->owner == o);
  CHECK(setup->name == "first");
  CHECK(setup->type == "scripted");

  // A second spawn with no pid is published first: list is in publication order.
  std::string second = f.spawn_ok(o, "second");
  CHECK(ids_of(f.service.list(o)) == std::vector<std::string>{second});
  gate->open();
  REQUIRE(f.run_until([&] { return first.done(); }));
  CHECK_FALSE(first.inside());
  REQUIRE(first.ok());
  const SpawnResult& res = first.result().value();
  CHECK(res.session.id == spec.session_id);
  CHECK(res.session.name == "first");
  CHECK(res.session.type == "scripted");
  CHECK(res.session.pid == 31337);
  CHECK(res.session.status.running());
  CHECK(res.motd == "welcome\n");
  CHECK(f.service.has_owner_activity(o));
  CHECK(record_of(f.service, res.session.id)->state == RecordState::published);
  CHECK(record_of(f.service, res.session.id)->published);

  auto list = f.service.list(o);
  CHECK(ids_of(list) == std::vector<std::string>{second, res.session.id});
  CHECK_FALSE(list[0].pid.has_value());
  CHECK(list[0].name == "second");

  // Other owners see only their own.
  CHECK(f.service.list(other).empty());
  CHECK_FALSE(f.service.has_owner_activity(other));
  std::string theirs = f.spawn_ok(other, "first");  // names are owner-local
  CHECK(ids_of(f.service.list(other)) == std::vector<std::string>{theirs});
  CHECK(f.service.list(o).size() == 2);
  CHECK(f.service.list(Owner{}).empty());

  // list is fresh: a status change shows up.
  f.backend->session(second)->status = SessionStatus::exited_with_code(7);
  CHECK(f.service.list(o)[0].status == SessionStatus::exited_with_code(7));
}

// 3.
TEST_CASE("spawn: failures are checked in the contract's order") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Owner gone = f.service.mint_owner("gone");
  auto disposed = f.dispose_owner(gone);
  REQUIRE(f.run_until([&] { return disposed.done(); }));
  REQUIRE(disposed.ok());
  Loop l2;
  Owner foreign;
  {
    Service other(l2.loop);
    foreign = other.mint_owner("agent");
  }
  std::size_t backend_calls = f.backend->spawn_records().size();

  // Not live (never minted here, default, disposed) wins over a missing type and a bad name.
  for (const Owner& dead : {Owner{}, foreign, gone}) {
    auto r = f.spawn(dead, f.options("", {}, "missing"));
    CHECK(r.error()->code == Code::OWNER_NOT_LIVE);
    CHECK(r.error()->message == "PTY owner is no longer live");
    CHECK_FALSE(r.inside());
  }
  // Then the type, before the name.
  CHECK(f.spawn(o, f.options("", {}, "missing")).error()->code == Code::NO_BACKEND);
  CHECK(f.spawn(o, f.options("")).error()->code == Code::INVALID_ARGUMENT);

  // A pre-aborted caller signal: its identical reason, before the owner check.
  AbortController c;
  Error reason = make_error(Code::ABORTED, "caller changed its mind");
  c.abort(reason);
  CHECK(f.spawn(o, f.options("x", c.signal())).error() == reason);
  CHECK(f.spawn(gone, f.options("", c.signal(), "missing")).error() == reason);
  CHECK(f.backend->spawn_records().size() == backend_calls);  // the backend never ran

  // Duplicate names: against a published session and against a spawn still in setup.
  f.spawn_ok(o, "taken");
  auto dup = f.spawn(o, f.options("taken"));
  CHECK(dup.error()->code == Code::DUPLICATE_NAME);
  CHECK(dup.error()->message == "PTY session name \"taken\" already exists for this owner");
  auto gate = f.gate();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate)));
  auto pending = f.start_spawn(o, f.options("pending"));
  auto dup2 = f.spawn(o, f.options("pending"));
  CHECK(dup2.error()->code == Code::DUPLICATE_NAME);
  CHECK_FALSE(pending.done());
  // Sessions without a name never collide.
  f.spawn_ok(o);
  f.spawn_ok(o);
  gate->open();
  REQUIRE(f.run_until([&] { return pending.done(); }));
  CHECK(pending.ok());

  // Disposing service: SERVICE_DISPOSING before everything, even a pre-aborted signal.
  auto d = f.dispose();
  auto after = f.spawn(o, f.options("x", c.signal(), "missing"));
  CHECK(after.error()->code == Code::SERVICE_DISPOSING);
  CHECK(after.error()->message == "PTY service is disposing");
  REQUIRE(f.run_until([&] { return d.done(); }));
}

TEST_CASE("spawn: concurrent spawns with different names resolve independently") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  auto ga = f.gate();
  auto gb = f.gate();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(ga)));
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gb)));
  auto a = f.start_spawn(o, f.options("a"));
  auto b = f.start_spawn(o, f.options("b"));
  f.turn();
  gb->open();
  REQUIRE(f.run_until([&] { return b.done(); }));
  CHECK(b.ok());
  CHECK_FALSE(a.done());
  Error why = make_error(Code::BACKEND_FAILED, "a broke");
  ga->fail(why);
  REQUIRE(f.run_until([&] { return a.done(); }));
  CHECK(a.error() == why);  // the backend's own error, as is
  CHECK(ids_of(f.service.list(o)) == std::vector<std::string>{b.result()->session.id});
  // "a" was released; "b" still reserved.
  CHECK(f.spawn(o, f.options("a")).ok());
  CHECK(f.spawn(o, f.options("b")).error()->code == Code::DUPLICATE_NAME);
  CHECK(f.service.read(o, b.result()->session.id).ok());
}

// 23.
TEST_CASE("ids: unique for the service's life, across owners, including failed spawns") {
  Fixture f;
  std::set<std::string> ids;
  std::vector<std::string> published;
  std::size_t minted = 0;
  Owner a = f.service.mint_owner("a");
  Owner b = f.service.mint_owner("b");
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail()));
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::succeed()));
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail_cleanup()));
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::succeed()));
  for (int round = 0; round < 3; ++round) {
    for (const Owner& o : {a, b}) {
      auto r = f.spawn(o, f.options());
      if (r.ok()) {
        published.push_back(r.result()->session.id);
        f.kill(o, r.result()->session.id);
      }
    }
  }
  for (const auto& rec : f.backend->spawn_records()) {
    ++minted;
    ids.insert(rec.spec.session_id);
    CHECK_FALSE(rec.spec.session_id.empty());
  }
  CHECK(ids.size() == minted);
  CHECK(minted == 6);
  for (const auto& id : published) CHECK(ids.count(id) == 1);  // the id the backend was given
  // Disposing the owners (and consuming the cleanup failure) does not recycle ids.
  for (const Owner& o : {a, b}) {
    auto d = f.dispose_owner(o);
    REQUIRE(f.run_until([&] { return d.done(); }));
  }
  Owner c = f.service.mint_owner("c");
  for (int i = 0; i < 3; ++i) {
    std::string id = f.spawn_ok(c);
    CHECK(ids.insert(id).second);
  }
}

TEST_CASE("ids: records() and list() keep creation order past ten sessions") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::vector<std::string> made;
  for (int i = 0; i < 13; ++i) made.push_back(f.spawn_ok(o));
  std::vector<std::string> table;
  for (const auto& r : f.service.records()) table.push_back(r.id);
  CHECK(table == made);  // "in id order (oldest first)": oldest first, not string order
  CHECK(ids_of(f.service.list(o)) == made);
}

TEST_CASE("registry: a spawn pending when its backend is unregistered still lands") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  auto gate = f.gate();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate)));
  auto sp = f.start_spawn(o, f.options("n"));
  CHECK(f.registration.unregister());
  gate->open();
  REQUIRE(f.run_until([&] { return sp.done(); }));
  REQUIRE(sp.ok());
  CHECK(f.kill(o, sp.result()->session.id).result().value());
}
