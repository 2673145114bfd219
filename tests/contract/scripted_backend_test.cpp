// The scripted backend on its own (no service): it must keep the backend rules it is used to
// test, and its scripts and records must mean what the header says.
#include "contract_helpers.hpp"

using namespace contract;

namespace {

using SessionPtr = std::unique_ptr<BackendSession>;

struct Direct {
  Loop l;
  struct ev_loop* loop = l.loop;
  Service minting{loop};  // only to mint owners for specs
  std::shared_ptr<ScriptedBackend> backend = std::make_shared<ScriptedBackend>(loop, "fake");
  int next_id = 1;

  ~Direct() { run_until(loop, [&] { return backend->pending() == 0; }, 1000); }

  SpawnSpec spec(AbortSignal signal = {}) {
    SpawnSpec s;
    s.session_id = "s-" + std::to_string(next_id++);
    s.owner = minting.mint_owner("agent");
    s.request.name = "n";
    s.signal = std::move(signal);
    return s;
  }

  // Spawns and waits; checks the completion came from the loop.
  Result<SessionPtr> spawn(SpawnSpec s) {
    std::optional<Result<SessionPtr>> out;
    bool inside = true;
    backend->spawn(std::move(s), [&](Result<SessionPtr> r) {
      CHECK_FALSE(inside);
      out.emplace(std::move(r));
    });
    inside = false;
    REQUIRE(run_until(loop, [&] { return out.has_value(); }));
    return std::move(*out);
  }
};

}  // namespace

TEST_CASE("scripted: type name, default spawn, session fields and records") {
  Direct d;
  CHECK(d.backend->type() == "fake");
  ScriptedSpawn s;
  s.session.motd = "hello\n";
  s.session.pid = 4242;
  d.backend->spawns().push(s);
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr session = std::move(r.value());
  CHECK(session->motd() == "hello\n");
  CHECK(session->pid() == 4242);
  CHECK(session->status().running());

  auto r2 = d.spawn(d.spec());
  REQUIRE(r2.ok());
  CHECK_FALSE(r2.value()->pid().has_value());

  REQUIRE(d.backend->spawn_records().size() == 2);
  const ScriptedSpawnRecord& rec = d.backend->spawn_records()[0];
  CHECK(rec.spec.session_id == "s-1");
  CHECK(rec.spec.request.name == "n");
  CHECK(rec.completions == 1);
  CHECK(rec.completed);
  CHECK(rec.error == nullptr);
  CHECK(d.backend->session_ids() == std::vector<std::string>{"s-1", "s-2"});
  CHECK(d.backend->live_sessions() == 2);
  const ScriptedSessionRecord* s1 = d.backend->session("s-1");
  REQUIRE(s1);
  CHECK(s1->alive == std::set<int>{4242});
  CHECK(d.backend->session("s-2")->alive.size() == 1);  // a made-up simulated process
  CHECK_FALSE(d.backend->all_processes_gone());
  CHECK(d.backend->session("nope") == nullptr);

  session.reset();
  CHECK(d.backend->live_sessions() == 1);
  CHECK(d.backend->session("s-1")->destroyed);
  CHECK(d.backend->session("s-1")->alive.empty());
  CHECK(d.backend->session("s-1")->killed_on_destroy == std::set<int>{4242});
}

TEST_CASE("scripted: spawn failures, cleanup failures and the queue-then-default order") {
  Direct d;
  Error mine = make_error(Code::BACKEND_FAILED, "mine");
  d.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail(mine)));
  d.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail_cleanup()));
  d.backend->spawns().set_default(ScriptedSpawn::with(ScriptedStep::fail()));

  auto a = d.spawn(d.spec());
  REQUIRE_FALSE(a.ok());
  CHECK(a.error() == mine);
  auto b = d.spawn(d.spec());
  REQUIRE_FALSE(b.ok());
  CHECK(is_backend_cleanup_error(b.error()));
  auto c = d.spawn(d.spec());
  REQUIRE_FALSE(c.ok());
  CHECK(c.error()->code == Code::BACKEND_FAILED);
  auto e = d.spawn(d.spec());  // the default stays
  CHECK_FALSE(e.ok());
  CHECK(d.backend->session_ids().empty());
}

TEST_CASE("scripted: turns delay a step, steps with equal turns keep their order") {
  Direct d;
  std::vector<std::string> order;
  d.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::succeed().after_turns(5)));
  d.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::succeed()));
  d.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::fail()));
  std::vector<SessionPtr> keep;
  for (const char* tag : {"slow", "fast", "fail"}) {
    std::string t = tag;
    d.backend->spawn(d.spec(), [&, t](Result<SessionPtr> r) {
      order.push_back(t);
      if (r.ok()) keep.push_back(std::move(r.value()));
    });
  }
  CHECK(d.backend->pending() == 3);
  REQUIRE(run_until(d.loop, [&] { return order.size() == 3; }));
  CHECK(order == std::vector<std::string>{"fast", "fail", "slow"});
  CHECK(d.backend->pending() == 0);
}

TEST_CASE("scripted: a gate holds a step until opened; fail() overrides the script") {
  Direct d;
  auto gate = ScriptedGate::make();
  d.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate)));
  d.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate)));
  int done = 0;
  std::vector<Result<SessionPtr>> results;
  for (int i = 0; i < 2; ++i) {
    d.backend->spawn(d.spec(), [&](Result<SessionPtr> r) {
      ++done;
      results.push_back(std::move(r));
    });
  }
  turn(d.loop);
  CHECK(done == 0);
  CHECK(gate->waiting() == 2);
  Error why = make_error(Code::BACKEND_FAILED, "gate says no");
  CHECK(gate->fail(why));
  CHECK(done == 0);  // never inside the release
  CHECK_FALSE(gate->open());
  REQUIRE(run_until(d.loop, [&] { return done == 2; }));
  CHECK(results[0].error() == why);
  CHECK(results[1].error() == why);

  // A step that starts on an already released gate goes straight on.
  auto open = ScriptedGate::make();
  open->open();
  d.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(open)));
  CHECK(d.spawn(d.spec()).ok());
}

TEST_CASE("scripted: abort policies — honour, honour with a failed cleanup, ignore") {
  Direct d;
  Error reason = make_error(Code::ABORTED, "caller");

  SUBCASE("honour: completes with the exact reason, after the abort, from the loop") {
    auto gate = ScriptedGate::make();
    d.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate)));
    AbortController c;
    std::optional<Result<SessionPtr>> out;
    d.backend->spawn(d.spec(c.signal()), [&](Result<SessionPtr> r) { out.emplace(std::move(r)); });
    turn(d.loop);
    c.abort(reason);
    CHECK_FALSE(out.has_value());
    REQUIRE(run_until(d.loop, [&] { return out.has_value(); }));
    CHECK(out->error() == reason);
    const auto& rec = d.backend->spawn_records()[0];
    CHECK(rec.aborted_while_pending);
    CHECK_FALSE(rec.aborted_at_start);
    CHECK(rec.abort_reason == reason);
    CHECK(gate->waiting() == 0);
    gate->open();
    turn(d.loop);
    CHECK(rec.completions == 1);
  }
  SUBCASE("honour_cleanup_fails: a cleanup error holding the reason") {
    ScriptedSpawn s = ScriptedSpawn::with(ScriptedStep::succeed().after_turns(100),
                                          ScriptedAbortPolicy::honour_cleanup_fails);
    Error cleanup = make_error(Code::BACKEND_FAILED, "leaked");
    s.abort_cleanup_error = cleanup;
    d.backend->spawns().push(s);
    AbortController c;
    std::optional<Result<SessionPtr>> out;
    d.backend->spawn(d.spec(c.signal()), [&](Result<SessionPtr> r) { out.emplace(std::move(r)); });
    c.abort(reason);
    REQUIRE(run_until(d.loop, [&] { return out.has_value(); }));
    REQUIRE(is_backend_cleanup_error(out->error()));
    CHECK(out->error()->errors[0] == reason);
    CHECK(out->error()->errors[1] == cleanup);
  }
  SUBCASE("ignore: records the abort and returns a session anyway") {
    auto gate = ScriptedGate::make();
    d.backend->spawns().push(
        ScriptedSpawn::with(ScriptedStep::gated(gate), ScriptedAbortPolicy::ignore));
    AbortController c;
    std::optional<Result<SessionPtr>> out;
    d.backend->spawn(d.spec(c.signal()), [&](Result<SessionPtr> r) { out.emplace(std::move(r)); });
    c.abort(reason);
    turn(d.loop);
    CHECK_FALSE(out.has_value());
    gate->open();
    REQUIRE(run_until(d.loop, [&] { return out.has_value(); }));
    CHECK(out->ok());
    CHECK(d.backend->spawn_records()[0].aborted_while_pending);
  }
  SUBCASE("already aborted at spawn: honoured at once, from the loop") {
    AbortController c;
    c.abort(reason);
    auto r = d.spawn(d.spec(c.signal()));
    CHECK(r.error() == reason);
    CHECK(d.backend->spawn_records()[0].aborted_at_start);
  }
}

TEST_CASE("scripted: close joins while in flight, empties the alive set, failures retry") {
  Direct d;
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  ScriptedSessionRecord* rec = d.backend->session("s-1");
  auto gate = ScriptedGate::make();
  d.backend->session_script("s-1").closes.push(ScriptedStep::fail().on_gate(gate));
  int a = 0, b = 0, c = 0;
  Status sa, sb;
  s->close("first", [&](Status st) { ++a; sa = st; });
  s->close("second", [&](Status st) { ++b; sb = st; });
  turn(d.loop);
  CHECK(a + b == 0);
  CHECK(rec->close_calls == 2);
  CHECK(rec->close_attempts == 1);
  gate->open();
  REQUIRE(run_until(d.loop, [&] { return a == 1 && b == 1; }));
  CHECK_FALSE(sa.ok());
  CHECK(sa.error() == sb.error());
  CHECK_FALSE(rec->alive.empty());
  CHECK_FALSE(rec->closed);
  // The failure cleared the fence: a later close retries and succeeds (the default).
  s->close("third", [&](Status st) {
    ++c;
    CHECK(st.ok());
  });
  REQUIRE(run_until(d.loop, [&] { return c == 1; }));
  CHECK(rec->close_attempts == 2);
  CHECK(rec->closed);
  CHECK(rec->alive.empty());
  CHECK(d.backend->all_processes_gone());
  CHECK(rec->close_reasons == std::vector<std::string>{"first", "second", "third"});
  REQUIRE(rec->close_results.size() == 2);
  CHECK(rec->close_results[0] != nullptr);
  CHECK(rec->close_results[1] == nullptr);
  CHECK(d.backend->close_log() ==
        std::vector<std::string>{"s-1: first", "s-1: second", "s-1: third"});
}

TEST_CASE("scripted: the lookup order — session next, every next, session default, every default") {
  Direct d;
  Error e_session_next = make_error(Code::BACKEND_FAILED, "session next");
  Error e_every_next = make_error(Code::BACKEND_FAILED, "every next");
  Error e_session_default = make_error(Code::BACKEND_FAILED, "session default");
  // Scripted before the session exists.
  d.backend->session_script("s-1").closes.push(ScriptedStep::fail(e_session_next));
  d.backend->every_session().closes.push(ScriptedStep::fail(e_every_next));
  d.backend->every_session().closes.set_default(ScriptedStep::succeed());
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  std::vector<Error> seen;
  auto close_once = [&] {
    std::size_t before = seen.size();
    s->close("x", [&](Status st) { seen.push_back(st.ok() ? nullptr : st.error()); });
    REQUIRE(run_until(d.loop, [&] { return seen.size() == before + 1; }));
  };
  close_once();
  close_once();
  d.backend->session_script("s-1").closes.set_default(ScriptedStep::fail(e_session_default));
  close_once();
  close_once();
  d.backend->session_script("s-1").closes.fallback.reset();
  close_once();
  CHECK(seen == std::vector<Error>{e_session_next, e_every_next, e_session_default,
                                   e_session_default, nullptr});
}

TEST_CASE("scripted: a destroyed session's gated steps never fire") {
  Direct d;
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  auto gate = ScriptedGate::make();
  d.backend->session_script("s-1").closes.push(ScriptedStep::gated(gate));
  d.backend->session_script("s-1").sends.push(ScriptedSend::with(ScriptedStep::gated(gate)));
  d.backend->session_script("s-1").signals.push(ScriptedSignal::with(ScriptedStep::gated(gate)));
  int fired = 0;
  auto op = s->start_send({}, [&](Result<SendResult>) { ++fired; });
  REQUIRE(op.ok());
  CHECK(s->signal(Signal::sigint, [&](Result<SignalResult>) { ++fired; }).ok());
  s->close("bye", [&](Status) { ++fired; });
  // The close settles the live send first (the tree goes away under it).
  REQUIRE(run_until(d.loop, [&] { return fired == 1; }));
  CHECK(gate->waiting() == 2);
  s.reset();
  CHECK(gate->waiting() == 0);
  CHECK(d.backend->pending() == 0);
  gate->open();
  turn(d.loop);
  CHECK(fired == 1);
  // The send operation outlives its session harmlessly.
  CHECK_FALSE(op.value()->cancel());
  CHECK(op.value()->read_output().text.empty());
}

TEST_CASE("scripted: sends — scripted result, consuming output, cancel until settled") {
  Direct d;
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  auto gate = ScriptedGate::make();
  SendResult result;
  result.viewport = "out";
  result.wait_reason = WaitReason::stdin_read;
  ScriptedSend send = ScriptedSend::with(ScriptedStep::gated(gate), result);
  send.output = {{"a", false}, {"b", true}};
  d.backend->session_script("s-1").sends.push(send);
  std::optional<Result<SendResult>> out;
  SendRequest req;
  req.text = "ls";
  auto op = s->start_send(req, [&](Result<SendResult> res) { out.emplace(std::move(res)); });
  REQUIRE(op.ok());
  auto& o = *op.value();
  CHECK(o.read_output().text == "a");
  OutputDelta second = o.read_output();
  CHECK(second.text == "b");
  CHECK(second.truncated);
  CHECK(o.read_output().text.empty());
  CHECK(o.cancel());
  CHECK(o.cancel());
  gate->open();
  REQUIRE(run_until(d.loop, [&] { return out.has_value(); }));
  REQUIRE(out->ok());
  CHECK(out->value().viewport == "out");
  CHECK(out->value().wait_reason == WaitReason::stdin_read);
  CHECK_FALSE(o.cancel());
  const auto* rec = d.backend->session("s-1");
  CHECK(rec->start_send_calls == 1);
  CHECK(rec->sends[0].text == "ls");
  CHECK(rec->cancel_calls == 3);
  CHECK(rec->send_completions == 1);

  // settle_on_cancel: cancel completes the send even while it waits.
  ScriptedSend cancellable = ScriptedSend::with(ScriptedStep::gated(ScriptedGate::make()));
  cancellable.settle_on_cancel = true;
  d.backend->session_script("s-1").sends.push(cancellable);
  std::optional<Result<SendResult>> out2;
  auto op2 = s->start_send({}, [&](Result<SendResult> res) { out2.emplace(std::move(res)); });
  REQUIRE(op2.ok());
  CHECK(op2.value()->cancel());
  CHECK_FALSE(out2.has_value());
  REQUIRE(run_until(d.loop, [&] { return out2.has_value(); }));
  CHECK(out2->value().wait_reason == WaitReason::stdin_read);

  // reject: a synchronous failure.
  d.backend->session_script("s-1").sends.push(ScriptedSend::with(ScriptedStep::reject()));
  auto rejected = s->start_send({}, [&](Result<SendResult>) { FAIL("must not run"); });
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.error()->code == Code::SESSION_EXITED);

  // An exited session rejects sends and signals on its own.
  d.backend->session("s-1")->status = SessionStatus::exited_with_code(3);
  CHECK(s->status().exit_code == 3);
  auto exited = s->start_send({}, [&](Result<SendResult>) { FAIL("must not run"); });
  CHECK(exited.error()->code == Code::SESSION_EXITED);
  CHECK(s->signal(Signal::sigterm, [](Result<SignalResult>) { FAIL("must not run"); }).error()->code ==
        Code::SESSION_EXITED);
  turn(d.loop);
}

TEST_CASE("scripted: read validates like a real backend and returns scripted pages") {
  Direct d;
  ScriptedSpawn sp;
  sp.session.page.text = "default";
  ReadPage page;
  page.text = "scripted";
  sp.session.script.reads.push_back(page);
  d.backend->spawns().push(sp);
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  CHECK(s->read({-1, 10}).error()->code == Code::INVALID_ARGUMENT);
  CHECK(s->read({0, 0}).error()->code == Code::INVALID_ARGUMENT);
  CHECK(s->read({}).value().text == "scripted");
  CHECK(s->read({}).value().text == "default");
  CHECK(d.backend->session("s-1")->read_calls == 4);
}

TEST_CASE("scripted: signals — result, pgid, failure") {
  Direct d;
  ScriptedSpawn sp;
  sp.session.pid = 77;
  d.backend->spawns().push(sp);
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  d.backend->session_script("s-1").signals.push(ScriptedSignal::with(ScriptedStep::succeed(), 5));
  d.backend->session_script("s-1").signals.push(ScriptedSignal::with(ScriptedStep::fail()));
  std::vector<Result<SignalResult>> got;
  for (Signal sig : {Signal::sigint, Signal::sigterm, Signal::sigkill}) {
    CHECK(s->signal(sig, [&](Result<SignalResult> res) { got.push_back(std::move(res)); }).ok());
  }
  CHECK(got.empty());
  REQUIRE(run_until(d.loop, [&] { return got.size() == 3; }));
  CHECK(got[0].value().target_pgid == 5);
  CHECK(got[0].value().signal == Signal::sigint);
  CHECK_FALSE(got[1].ok());
  CHECK(got[2].value().target_pgid == 77);
  const auto* rec = d.backend->session("s-1");
  CHECK(rec->signals == std::vector<Signal>{Signal::sigint, Signal::sigterm, Signal::sigkill});
  CHECK(rec->signal_completions == 3);
}

TEST_CASE("scripted: misbehave_call_again calls a completion a second time, late") {
  Direct d;
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  Error late = make_error(Code::BACKEND_FAILED, "stale");
  d.backend->session_script("s-1").closes.push(ScriptedStep::fail().then_call_again(late, 3));
  std::vector<Status> got;
  s->close("x", [&](Status st) { got.push_back(st); });
  REQUIRE(run_until(d.loop, [&] { return got.size() == 2; }));
  CHECK(got[1].error() == late);
  // And never after the session is gone.
  d.backend->session_script("s-1").closes.push(ScriptedStep::fail().then_call_again(late, 3));
  int calls = 0;
  s->close("y", [&](Status) {
    if (++calls == 1) s.reset();
  });
  REQUIRE(run_until(d.loop, [&] { return calls == 1; }));
  turn(d.loop);
  CHECK(calls == 1);
}

TEST_CASE("scripted: a screen of 24x80 by default, or as configured; screen reads are counted") {
  Direct d;
  ScriptedSpawn sp;
  sp.session.screen.rows = 10;
  sp.session.screen.cols = 20;
  sp.session.screen.lines = {"$ vim", "~"};
  sp.session.screen.alternate = true;
  d.backend->spawns().push(sp);
  auto configured = d.spawn(d.spec());
  auto plain = d.spawn(d.spec());
  REQUIRE(configured.ok());
  REQUIRE(plain.ok());
  CHECK(configured.value()->screen().value() == sp.session.screen);
  ScreenSnapshot fallback = plain.value()->screen().value();
  CHECK(fallback.rows == 24);
  CHECK(fallback.cols == 80);
  CHECK(fallback.lines.empty());
  CHECK(d.backend->session("s-1")->screen_calls == 1);
  CHECK(d.backend->session("s-2")->screen_calls == 1);

  // Queued answers come first (the session's, then every session's), as given.
  Error broke = make_error(Code::BACKEND_FAILED, "emulator broke");
  ScreenSnapshot queued;
  queued.rows = 3;
  queued.cols = 4;
  d.backend->every_session().screens.push_back(queued);
  d.backend->session_script("s-1").screens.push_back(broke);
  CHECK(configured.value()->screen().error() == broke);
  CHECK(configured.value()->screen().value() == queued);
  CHECK(configured.value()->screen().value() == sp.session.screen);
  CHECK(d.backend->session("s-1")->screen_calls == 4);
}

TEST_CASE("scripted: resize records every call, sets the size, and fails as scripted") {
  Direct d;
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  ScriptedSessionRecord* rec = d.backend->session("s-1");

  CHECK(s->resize(40, 100).ok());
  CHECK(s->screen().value().rows == 40);
  CHECK(s->screen().value().cols == 100);

  // A scripted failure is returned as is and leaves the size alone.
  Error broke = make_error(Code::BACKEND_FAILED, "TIOCSWINSZ failed");
  d.backend->session_script("s-1").resizes.push(broke);
  CHECK(s->resize(50, 60).error() == broke);
  CHECK(rec->screen.rows == 40);
  CHECK(rec->screen.cols == 100);

  // The backend validates nothing the service already does: any size is recorded as given.
  CHECK(s->resize(5000, 0).ok());
  CHECK(rec->screen.rows == 5000);
  CHECK(rec->screen.cols == 0);

  // every_session()'s default, after the session's own queue.
  d.backend->every_session().resizes.set_default(make_error(Code::INVALID_ARGUMENT, "no terminal"));
  d.backend->session_script("s-1").resizes.push(Status());
  CHECK(s->resize(7, 8).ok());
  CHECK(s->resize(9, 10).error()->code == Code::INVALID_ARGUMENT);
  d.backend->every_session().resizes.fallback.reset();

  // An exited session refuses an unscripted resize, as a real backend's would.
  rec->status = SessionStatus::exited_with_code(0);
  CHECK(s->resize(11, 12).error()->code == Code::SESSION_EXITED);
  CHECK(rec->screen.rows == 7);

  CHECK(rec->resizes == std::vector<ScriptedSize>{{40, 100}, {50, 60}, {5000, 0}, {7, 8}, {9, 10}, {11, 12}});
  CHECK(rec->resize_calls == 6);
  CHECK(d.backend->pending() == 0);  // synchronous: nothing scheduled
}

TEST_CASE("scripted: sends record their keys and submit as given") {
  Direct d;
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  SendRequest keys_only;
  keys_only.keys = {"Escape", ":", "w", "q", "Enter"};
  SendRequest text_no_submit;
  text_no_submit.text = "ls";
  text_no_submit.keys = {"Tab"};
  text_no_submit.submit = false;
  int done = 0;
  for (SendRequest req : {keys_only, text_no_submit}) {
    auto op = s->start_send(req, [&](Result<SendResult>) { ++done; });
    REQUIRE(op.ok());
    REQUIRE(run_until(d.loop, [&] { return done == 1; }));
    done = 0;
  }
  const ScriptedSessionRecord* rec = d.backend->session("s-1");
  REQUIRE(rec->sends.size() == 2);
  CHECK(rec->sends[0].keys == keys_only.keys);
  CHECK_FALSE(rec->sends[0].submit.has_value());
  CHECK_FALSE(rec->sends[0].submits());
  CHECK(rec->sends[1].text == "ls");
  CHECK(rec->sends[1].keys == std::vector<std::string>{"Tab"});
  CHECK(rec->sends[1].submit == false);
}

TEST_CASE("scripted: a viewport over the request's max_bytes is cut as the shell backend cuts it") {
  Direct d;
  auto r = d.spawn(d.spec());
  REQUIRE(r.ok());
  SessionPtr s = std::move(r.value());
  std::string flood;
  for (int i = 1; i <= 1000; ++i) flood += std::to_string(i) + "\n";
  for (std::optional<std::size_t> cap : {std::optional<std::size_t>{}, std::optional<std::size_t>{200}}) {
    SendResult result;
    result.viewport = flood;
    d.backend->session_script("s-1").sends.push(ScriptedSend::with(ScriptedStep::succeed(), result));
    std::optional<Result<SendResult>> out;
    SendRequest req;
    req.text = "seq 1 1000";
    req.max_bytes = cap;
    auto op = s->start_send(req, [&](Result<SendResult> res) { out.emplace(std::move(res)); });
    REQUIRE(op.ok());
    REQUIRE(run_until(d.loop, [&] { return out.has_value(); }));
    REQUIRE(out->ok());
    const SendResult& got = out->value();
    if (!cap) {
      CHECK(got.viewport == flood);  // no cap: the script's viewport as it is
      CHECK_FALSE(got.truncated);
      continue;
    }
    CHECK(got.truncated);
    CHECK(got.viewport.size() <= *cap);
    CHECK(got.viewport.rfind("1\n2\n", 0) == 0);
    CHECK(got.viewport.find("[output truncated: " + std::to_string(got.omitted_lines) + " lines, " +
                            std::to_string(got.omitted_bytes) + " bytes left out]\n") != std::string::npos);
    CHECK(got.viewport.substr(got.viewport.size() - 5) == "1000\n");
  }
}
