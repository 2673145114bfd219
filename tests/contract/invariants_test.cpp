// The invariants (docs/contract.md, "Exactly once, from the loop", "Re-entrancy"):
// has_owner_activity sampled at every loop turn and callback, every completion exactly once
// and never inside its call, and re-entrant calls from completions.
#include "contract_helpers.hpp"

using namespace contract;

namespace {

// Samples a predicate on every loop iteration (an ev_check watcher) and on demand. Each
// sample records whether the expectation held, with a label for the failure message.
class Sampler {
 public:
  using Expect = std::function<std::optional<bool>()>;  // nullopt: either value is fine

  Sampler(struct ev_loop* loop, std::function<bool()> actual, Expect expect)
      : loop_(loop), actual_(std::move(actual)), expect_(std::move(expect)) {
    ev_check_init(&check_, &Sampler::on_check);
    check_.data = this;
    ev_check_start(loop_, &check_);
  }
  ~Sampler() { ev_check_stop(loop_, &check_); }
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void sample(const char* where) {
    ++samples_;
    std::optional<bool> want = expect_();
    if (!want) return;
    bool got = actual_();
    if (got != *want) {
      failures_.push_back((label ? *label + ", " : std::string()) + where +
                          (got ? ": true, want false" : ": false, want true"));
    }
  }
  int samples() const { return samples_; }
  const std::string* label = nullptr;  // optional: which stage the test is in
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  static void on_check(struct ev_loop*, ev_check* w, int) { static_cast<Sampler*>(w->data)->sample("loop turn"); }
  struct ev_loop* loop_;
  ev_check check_;
  std::function<bool()> actual_;
  Expect expect_;
  int samples_ = 0;
  std::vector<std::string> failures_;
};

void check_samples(const Sampler& s) {
  CHECK(s.samples() > 10);
  for (const auto& f : s.failures()) FAIL_CHECK(f);
}

}  // namespace

// 20.
TEST_CASE("activity: through spawn, publish, send, close: never false early, never true late") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  auto spawn_gate = f.gate();
  auto send_gate = f.gate();
  auto close_gate = f.gate();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(spawn_gate)));
  enum class Phase { before, live, closed_by_backend, delivered } phase = Phase::before;
  std::string id;
  Sampler s(
      f.loop, [&] { return f.service.has_owner_activity(o); },
      [&]() -> std::optional<bool> {
        switch (phase) {
          case Phase::before: return false;
          case Phase::live:
            // Once the backend proved the close, "idle" may show before the kill is delivered.
            if (!id.empty() && f.backend->session(id) && f.backend->session(id)->closed) return std::nullopt;
            return true;
          case Phase::closed_by_backend: return std::nullopt;
          case Phase::delivered: return false;
        }
        return std::nullopt;
      });
  s.sample("before spawn");
  phase = Phase::live;
  Capture<SpawnResult> sp;
  f.service.spawn(o, f.options("n"), sp.cb([&](const Result<SpawnResult>&) { s.sample("spawn callback"); }));
  s.sample("after spawn call");
  f.turn();
  id = f.backend->spawn_records().at(0).spec.session_id;
  f.backend->session_script(id).sends.push(ScriptedSend::with(ScriptedStep::gated(send_gate)));
  f.backend->session_script(id).closes.push(ScriptedStep::gated(close_gate));
  spawn_gate->open();
  REQUIRE(f.run_until([&] { return sp.done(); }));
  REQUIRE(sp.ok());
  f.turn();
  Capture<SendResult> send;
  REQUIRE(f.service.start_send(o, id, {}, send.cb([&](const Result<SendResult>&) { s.sample("send callback"); })).ok());
  s.sample("after start_send");
  f.turn();
  send_gate->open();
  REQUIRE(f.run_until([&] { return send.done(); }));
  f.turn();
  Capture<bool> k;
  REQUIRE(f.service.kill(o, id, k.cb([&](const Result<bool>&) {
                           phase = Phase::delivered;
                           s.sample("kill callback");
                         })).ok());
  s.sample("after kill call");
  f.turn();
  close_gate->open();
  REQUIRE(f.run_until([&] { return k.done(); }));
  f.turn();
  s.sample("end");
  check_samples(s);
}

TEST_CASE("activity: through a failed spawn and through a rollback") {
  // Between the backend settling (or the disposal starting) and the completion's delivery
  // either value is right: the record is gone, the news just has not arrived. Outside those
  // windows the value is exact.
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::optional<bool> expect = false;
  std::string stage = "start";
  Sampler s(f.loop, [&] { return f.service.has_owner_activity(o); }, [&] { return expect; });
  s.label = &stage;
  auto settled = [&](const std::string& id) {
    for (const auto& r : f.backend->spawn_records()) {
      if (r.spec.session_id == id) return r.completed;
    }
    return false;
  };

  // A plain backend failure: active until the backend failed; idle inside the rejection.
  auto g1 = f.gate();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail().on_gate(g1)));
  expect = true;
  stage = "failed spawn";
  Capture<SpawnResult> a;
  f.service.spawn(o, f.options("n"), a.cb([&](const Result<SpawnResult>&) {
    expect = false;
    s.sample("failed spawn callback");
  }));
  std::string id1 = f.backend->spawn_records().back().spec.session_id;
  f.turn();
  g1->open();
  REQUIRE(f.run_until([&] { return settled(id1); }));
  if (!a.done()) expect = std::nullopt;
  REQUIRE(f.run_until([&] { return a.done(); }));
  f.turn();

  // A caller abort with a late session: active through the rollback, idle in the rejection.
  auto g2 = f.gate();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(g2), ScriptedAbortPolicy::ignore));
  AbortController caller;
  expect = true;
  stage = "rollback";
  Capture<SpawnResult> b;
  f.service.spawn(o, f.options("n", caller.signal()), b.cb([&](const Result<SpawnResult>&) {
    expect = false;
    s.sample("rolled back spawn callback");
  }));
  std::string id = f.backend->spawn_records().back().spec.session_id;
  auto close_gate = f.gate();
  f.backend->session_script(id).closes.push(ScriptedStep::gated(close_gate));
  caller.abort(make_error(Code::ABORTED));
  f.turn();
  g2->open();
  f.turn();
  close_gate->open();
  REQUIRE(f.run_until([&] { return f.backend->session(id)->closed; }));
  if (!b.done()) expect = std::nullopt;
  REQUIRE(f.run_until([&] { return b.done(); }));
  f.turn();

  // A retained cleanup failure: active until a disposal consumes it, idle once delivered.
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail_cleanup()));
  expect = true;
  stage = "cleanup failure";
  Capture<SpawnResult> c;
  f.service.spawn(o, f.options("n"), c.cb());
  REQUIRE(f.run_until([&] { return c.done(); }));
  f.turn();
  s.sample("cleanup failure retained");
  Capture<void> d;
  expect = std::nullopt;  // the disposal consumes it from its start
  f.service.dispose_owner(o, d.cb([&](const Status&) {
    expect = false;
    s.sample("dispose_owner callback");
  }));
  REQUIRE(f.run_until([&] { return d.done(); }));
  f.turn();
  check_samples(s);
}

// 21.
TEST_CASE("completions: each runs exactly once and never inside the call that started it") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Owner dead = f.service.mint_owner("dead");
  std::vector<std::function<void()>> once;  // checks run at the end
  auto track = [&](auto& cap, const char* what) {
    once.push_back([&cap, what] {
      CAPTURE(what);
      CHECK(cap.calls() == 1);
      CHECK_FALSE(cap.inside());
    });
  };
  AbortController aborted;
  aborted.abort(make_error(Code::ABORTED));

  // Spawn: success and every rejection, all through the completion.
  Capture<SpawnResult> ok = f.start_spawn(o, f.options("a"));
  Capture<SpawnResult> dup = f.start_spawn(o, f.options("a"));
  Capture<SpawnResult> nob = f.start_spawn(o, f.options("b", {}, "missing"));
  Capture<SpawnResult> empty = f.start_spawn(o, f.options(""));
  Capture<SpawnResult> pre = f.start_spawn(o, f.options("c", aborted.signal()));
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::succeed()));
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail()));
  Capture<SpawnResult> second = f.start_spawn(o, f.options("d"));
  Capture<SpawnResult> failing = f.start_spawn(o, f.options("e"));
  auto dd = f.dispose_owner(dead);
  REQUIRE(f.run_until([&] { return dd.done(); }));
  Capture<SpawnResult> notlive = f.start_spawn(dead, f.options());
  for (auto* c : {&ok, &dup, &nob, &empty, &pre, &second, &failing, &notlive}) track(*c, "spawn");
  track(dd, "dispose_owner(dead)");
  REQUIRE(f.run_until([&] { return ok.done() && second.done() && failing.done() && notlive.done(); }));
  std::string id = ok.result()->session.id;
  std::string id2 = second.result()->session.id;

  // Sends, signals: success and failure.
  f.backend->session_script(id).sends.push(ScriptedSend::with(ScriptedStep::succeed()));
  f.backend->session_script(id2).sends.push(ScriptedSend::with(ScriptedStep::fail()));
  f.backend->session_script(id).signals.push(ScriptedSignal::with(ScriptedStep::fail()));
  Capture<SendResult> s1, s2;
  Capture<SignalResult> g1, g2;
  REQUIRE(s1.during([&] { return f.service.start_send(o, id, {}, s1.cb()); }).ok());
  REQUIRE(s2.during([&] { return f.service.start_send(o, id2, {}, s2.cb()); }).ok());
  REQUIRE(g1.during([&] { return f.service.signal(o, id, Signal::sigint, g1.cb()); }).ok());
  REQUIRE(g2.during([&] { return f.service.signal(o, id2, Signal::sigint, g2.cb()); }).ok());
  for (auto* c : {&s1, &s2}) track(*c, "send");
  for (auto* c : {&g1, &g2}) track(*c, "signal");
  REQUIRE(f.run_until([&] { return s1.done() && s2.done() && g1.done() && g2.done(); }));

  // Kills: a failure, a join of the retry, success.
  f.backend->session_script(id).closes.push(ScriptedStep::fail());
  Capture<bool> k1, k2, k3;
  REQUIRE(k1.during([&] { return f.service.kill(o, id, k1.cb()); }).ok());
  REQUIRE(f.run_until([&] { return k1.done(); }));
  REQUIRE(k2.during([&] { return f.service.kill(o, id, k2.cb()); }).ok());
  REQUIRE(k3.during([&] { return f.service.kill(o, id, k3.cb()); }).ok());
  for (auto* c : {&k1, &k2, &k3}) track(*c, "kill");
  REQUIRE(f.run_until([&] { return k2.done() && k3.done(); }));

  // Disposals: owner (with a join), already disposed, never minted, service (with a join,
  // and one after it completed).
  auto o1 = f.dispose_owner(o);
  auto o2 = f.dispose_owner(o);
  REQUIRE(f.run_until([&] { return o1.done() && o2.done(); }));
  auto o3 = f.dispose_owner(o);
  auto o4 = f.dispose_owner(Owner{});
  auto d1 = f.dispose();
  auto d2 = f.dispose();
  REQUIRE(f.run_until([&] { return o3.done() && o4.done() && d1.done() && d2.done(); }));
  auto d3 = f.dispose();
  Capture<SpawnResult> after = f.start_spawn(o, f.options());
  REQUIRE(f.run_until([&] { return d3.done() && after.done(); }));
  for (auto* c : {&o1, &o2, &o3, &o4, &d1, &d2, &d3}) track(*c, "dispose");
  track(after, "spawn after dispose");

  f.turn(200);  // nothing arrives late
  for (auto& check : once) check();
}

// 22.
TEST_CASE("re-entrancy: kill inside a spawn completion") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Capture<bool> k;
  Capture<SpawnResult> sp;
  f.service.spawn(o, f.options("n"), sp.cb([&](const Result<SpawnResult>& r) {
    REQUIRE(r.ok());
    CHECK(f.service.kill(o, r.value().session.id, k.cb()).ok());
    CHECK(f.service.has_owner_activity(o));
  }));
  REQUIRE(f.run_until([&] { return k.done(); }));
  CHECK(k.result().value() == true);
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  CHECK(f.backend->all_processes_gone());
  f.turn();
  CHECK(sp.calls() == 1);
  CHECK(k.calls() == 1);
}

TEST_CASE("re-entrancy: dispose_owner inside a send completion; a new send inside one") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  Capture<SendResult> first, chained;
  Capture<void> d;
  std::shared_ptr<Send> chained_send;
  REQUIRE(f.service.start_send(o, id, {}, first.cb([&](const Result<SendResult>&) {
    // The slot is free inside the completion: the next send may start from here.
    auto next = f.service.start_send(o, id, {}, chained.cb([&](const Result<SendResult>&) {
      f.service.dispose_owner(o, d.cb());
      CHECK_FALSE(f.service.is_owner_live(o));
    }));
    CHECK(next.ok());
    if (next.ok()) chained_send = *next;
  })).ok());
  REQUIRE(f.run_until([&] { return d.done(); }));
  CHECK(d.ok());
  CHECK(f.backend->session(id)->close_reasons == std::vector<std::string>{"PTY owner disposed"});
  CHECK_FALSE(f.service.has_owner_activity(o));
  CHECK(f.service.records().empty());
  REQUIRE(chained_send);
  CHECK(chained_send->settled());
  f.turn();
  CHECK(first.calls() == 1);
  CHECK(chained.calls() == 1);
  CHECK(d.calls() == 1);
}

TEST_CASE("re-entrancy: dispose inside a kill completion, spawn inside a failed spawn") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  std::string other = f.spawn_ok(o);
  Capture<void> d;
  Capture<bool> k;
  Capture<SpawnResult> retry;
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail()));
  Capture<SpawnResult> failed;
  f.service.spawn(o, f.options("x"), failed.cb([&](const Result<SpawnResult>& r) {
    CHECK_FALSE(r.ok());
    f.service.spawn(o, f.options("x"), retry.cb());  // the name was released already
  }));
  REQUIRE(f.run_until([&] { return retry.done(); }));
  CHECK(retry.ok());
  REQUIRE(f.service.kill(o, id, k.cb([&](const Result<bool>&) { f.service.dispose(d.cb()); })).ok());
  REQUIRE(f.run_until([&] { return d.done(); }));
  CHECK(k.result().value() == true);
  CHECK(d.ok());
  CHECK(f.backend->session(other)->close_reasons == std::vector<std::string>{"PTY service disposed"});
  CHECK(f.service.records().empty());
  CHECK(f.backend->all_processes_gone());
  CHECK(f.backend->live_sessions() == 0);
  f.turn();
  CHECK(k.calls() == 1);
  CHECK(d.calls() == 1);
  CHECK(failed.calls() == 1);
}

TEST_CASE("re-entrancy: kill inside a signal completion, dispose_owner inside dispose_owner") {
  Fixture f;
  Owner a = f.service.mint_owner("a");
  Owner b = f.service.mint_owner("b");
  std::string id = f.spawn_ok(a);
  f.spawn_ok(b);
  Capture<SignalResult> sig;
  Capture<bool> k;
  REQUIRE(f.service.signal(a, id, Signal::sigterm, sig.cb([&](const Result<SignalResult>&) {
    CHECK(f.service.kill(a, id, k.cb()).ok());
  })).ok());
  REQUIRE(f.run_until([&] { return k.done(); }));
  CHECK(k.result().value());
  Capture<void> da, db;
  f.service.dispose_owner(a, da.cb([&](const Status&) { f.service.dispose_owner(b, db.cb()); }));
  REQUIRE(f.run_until([&] { return db.done(); }));
  CHECK(da.ok());
  CHECK(db.ok());
  CHECK(f.service.records().empty());
  CHECK(f.backend->all_processes_gone());
}

TEST_CASE("re-entrancy: a backend destroyed-session completion path — kill from a kill") {
  // A kill from inside the completion of a kill of another session, while disposal runs.
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string x = f.spawn_ok(o);
  std::string y = f.spawn_ok(o);
  Capture<bool> kx, ky;
  Capture<void> d;
  REQUIRE(f.service.kill(o, x, kx.cb([&](const Result<bool>&) {
    CHECK(f.service.kill(o, y, ky.cb()).ok());
    f.service.dispose_owner(o, d.cb());
  })).ok());
  REQUIRE(f.run_until([&] { return kx.done() && ky.done() && d.done(); }));
  CHECK(kx.result().value());
  CHECK(ky.ok());
  CHECK(d.ok());
  CHECK(f.service.records().empty());
  CHECK(f.backend->all_processes_gone());
}
