// Fencing to the exact owner (owner identity included), the one-live-send rule, and
// signals (docs/contract.md, "Fencing", "Sends", "Reads and signals").
#include "contract_helpers.hpp"

using namespace contract;

// 4.
TEST_CASE("fencing: a foreign owner fails synchronously with FOREIGN_SESSION; unknown ids NO_SESSION") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Owner intruder = f.service.mint_owner("agent");  // same label: still another agent
  std::string id = f.spawn_ok(o, "mine");
  const ScriptedSessionRecord* rec = f.backend->session(id);

  Capture<SendResult> send;
  Capture<SignalResult> sig;
  Capture<bool> killed;
  auto check_sync = [&](const Owner& who, const std::string& target, Code code) {
    CAPTURE(target);
    auto r = f.service.read(who, target);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error()->code == code);
    Status s = f.service.signal(who, target, Signal::sigint, sig.cb());
    REQUIRE_FALSE(s.ok());
    CHECK(s.error()->code == code);
    auto st = f.service.start_send(who, target, {}, send.cb());
    REQUIRE_FALSE(st.ok());
    CHECK(st.error()->code == code);
    Status k = f.service.kill(who, target, killed.cb());
    REQUIRE_FALSE(k.ok());
    CHECK(k.error()->code == code);
    return r.error();
  };
  Error foreign = check_sync(intruder, id, Code::FOREIGN_SESSION);
  CHECK(foreign->message == "PTY session ID belongs to another agent");
  Error unknown = check_sync(o, "pty-does-not-exist", Code::NO_SESSION);
  CHECK(unknown->message == "unknown PTY session ID");
  check_sync(intruder, "pty-does-not-exist", Code::NO_SESSION);
  check_sync(Owner{}, id, Code::OWNER_NOT_LIVE);

  f.turn();
  CHECK(send.calls() == 0);
  CHECK(sig.calls() == 0);
  CHECK(killed.calls() == 0);
  // The backend never saw any of it, and the session is untouched.
  CHECK(rec->read_calls == 0);
  CHECK(rec->signal_calls == 0);
  CHECK(rec->start_send_calls == 0);
  CHECK(rec->close_calls == 0);
  CHECK(f.service.list(intruder).empty());
  CHECK(ids_of(f.service.list(o)) == std::vector<std::string>{id});

  // A closed id is NO_SESSION, for its owner too.
  CHECK(f.kill(o, id).result().value());
  check_sync(o, id, Code::NO_SESSION);

  // A disposed owner is not live, even for its own former sessions.
  std::string id2 = f.spawn_ok(o);
  Owner o2 = f.service.mint_owner("b");
  std::string id3 = f.spawn_ok(o2);
  auto d = f.dispose_owner(o2);
  REQUIRE(f.run_until([&] { return d.done(); }));
  check_sync(o2, id3, Code::OWNER_NOT_LIVE);
  CHECK(f.service.read(o, id2).ok());
}

TEST_CASE("fencing: backend validation errors pass through read") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto neg = f.service.read(o, id, {-1, 10});
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.error()->code == Code::INVALID_ARGUMENT);
  auto zero = f.service.read(o, id, {0, 0});
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error()->code == Code::INVALID_ARGUMENT);
  ReadPage page;
  page.text = "line\n";
  page.total_lines = 1;
  page.line_end = 1;
  f.backend->session_script(id).reads.push_back(page);
  auto ok = f.service.read(o, id, {0, 5});
  REQUIRE(ok.ok());
  CHECK(ok->text == "line\n");
  CHECK(ok->total_lines == 1);
}

// 5.
TEST_CASE("send: one live send, consuming output, cancel until settled, the slot frees") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  const ScriptedSessionRecord* rec = f.backend->session(id);
  auto gate = f.gate();
  SendResult result;
  result.viewport = "$ ls\nfile\n";
  result.wait_reason = WaitReason::stdin_read;
  result.truncated = true;
  ScriptedSend scripted = ScriptedSend::with(ScriptedStep::gated(gate), result);
  scripted.output = {{"$ ls\n", false}, {"file\n", true}};
  f.backend->session_script(id).sends.push(scripted);

  Capture<SendResult> first;
  SendRequest req;
  req.text = "ls";
  req.timeout = std::chrono::milliseconds(1500);
  auto send = first.during([&] { return f.service.start_send(o, id, req, first.cb()); });
  REQUIRE(send.ok());
  CHECK_FALSE(first.done());
  std::shared_ptr<Send> s = *send;
  CHECK_FALSE(s->settled());
  CHECK(record_of(f.service, id)->state == RecordState::sending);
  CHECK(rec->sends.at(0).text == "ls");
  CHECK(rec->sends.at(0).timeout == std::chrono::milliseconds(1500));

  Capture<SendResult> second;
  auto busy = f.service.start_send(o, id, {}, second.cb());
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.error()->code == Code::SEND_ACTIVE);

  CHECK(s->read_output().text == "$ ls\n");
  OutputDelta d2 = s->read_output();
  CHECK(d2.text == "file\n");
  CHECK(d2.truncated);
  CHECK(s->read_output().text.empty());

  // Reads and signals run while a send is live.
  CHECK(f.service.read(o, id).ok());
  Capture<SignalResult> sig;
  CHECK(f.service.signal(o, id, Signal::sigint, sig.cb()).ok());

  CHECK(s->cancel());
  CHECK(rec->cancel_calls == 1);
  gate->open();
  REQUIRE(f.run_until([&] { return first.done() && sig.done(); }));
  CHECK_FALSE(first.inside());
  REQUIRE(first.ok());
  CHECK(first.result()->viewport == "$ ls\nfile\n");
  CHECK(first.result()->wait_reason == WaitReason::stdin_read);
  CHECK(first.result()->session_status.running());
  CHECK(first.result()->truncated);
  CHECK(s->settled());
  CHECK_FALSE(s->cancel());
  CHECK(record_of(f.service, id)->state == RecordState::published);
  CHECK(sig.ok());
  CHECK(sig.result()->signal == Signal::sigint);

  // The slot freed after success; a failing send frees it too.
  Error broke = make_error(Code::BACKEND_FAILED, "send broke");
  f.backend->session_script(id).sends.push(ScriptedSend::with(ScriptedStep::fail(broke)));
  Capture<SendResult> failing;
  auto s2 = f.service.start_send(o, id, {}, failing.cb());
  REQUIRE(s2.ok());
  REQUIRE(f.run_until([&] { return failing.done(); }));
  CHECK(failing.error() == broke);
  CHECK((*s2)->settled());
  CHECK_FALSE((*s2)->cancel());
  Capture<SendResult> third;
  auto s3 = f.service.start_send(o, id, {}, third.cb());
  REQUIRE(s3.ok());
  REQUIRE(f.run_until([&] { return third.done(); }));
  CHECK(third.ok());

  // A backend's synchronous refusal is returned, and the slot stays free.
  f.backend->session_script(id).sends.push(ScriptedSend::with(ScriptedStep::reject()));
  Capture<SendResult> refused;
  auto s4 = f.service.start_send(o, id, {}, refused.cb());
  REQUIRE_FALSE(s4.ok());
  CHECK(s4.error()->code == Code::SESSION_EXITED);
  Capture<SendResult> fourth;
  auto s5 = f.service.start_send(o, id, {}, fourth.cb());
  REQUIRE(s5.ok());
  REQUIRE(f.run_until([&] { return fourth.done(); }));
  f.turn();
  CHECK(second.calls() == 0);
  CHECK(refused.calls() == 0);
  CHECK(first.calls() == 1);
  CHECK(failing.calls() == 1);
}

TEST_CASE("send: fails while closing; a close settles the live send first; Send outlives it") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  auto send_gate = f.gate();
  auto close_gate = f.gate();
  ScriptedSend scripted = ScriptedSend::with(ScriptedStep::gated(send_gate));
  scripted.output = {{"never read", false}};
  f.backend->session_script(id).sends.push(scripted);
  f.backend->session_script(id).closes.push(ScriptedStep::gated(close_gate));

  Capture<SendResult> live;
  auto send = f.service.start_send(o, id, {}, live.cb());
  REQUIRE(send.ok());
  Capture<bool> killed;
  REQUIRE(f.service.kill(o, id, killed.cb()).ok());
  CHECK(record_of(f.service, id)->state == RecordState::closing);

  Capture<SendResult> during;
  auto refused = f.service.start_send(o, id, {}, during.cb());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error()->code == Code::SESSION_CLOSING);
  Capture<SignalResult> sig;
  Status s = f.service.signal(o, id, Signal::sigterm, sig.cb());
  REQUIRE_FALSE(s.ok());
  CHECK(s.error()->code == Code::SESSION_CLOSING);

  // The close settles the live send before the close itself completes.
  REQUIRE(f.run_until([&] { return live.done(); }));
  CHECK_FALSE(killed.done());
  CHECK((*send)->settled());
  close_gate->open();
  REQUIRE(f.run_until([&] { return killed.done(); }));
  CHECK(killed.result().value());
  // The Send stays usable after its session closed.
  CHECK((*send)->read_output().text.empty());
  CHECK_FALSE((*send)->cancel());
  f.turn();
  CHECK(during.calls() == 0);
  CHECK(sig.calls() == 0);
  CHECK(live.calls() == 1);
}

TEST_CASE("signal: the backend's result and failures; an exited session refuses") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  ScriptedSpawn sp;
  sp.session.pid = 555;
  f.backend->spawns().push(sp);
  std::string id = f.spawn_ok(o);
  Error broke = make_error(Code::BACKEND_FAILED, "kill(2) failed");
  f.backend->session_script(id).signals.push(ScriptedSignal::with(ScriptedStep::succeed(), 556));
  f.backend->session_script(id).signals.push(ScriptedSignal::with(ScriptedStep::fail(broke)));
  Capture<SignalResult> a, b;
  CHECK(a.during([&] { return f.service.signal(o, id, Signal::sigtstp, a.cb()); }).ok());
  CHECK(b.during([&] { return f.service.signal(o, id, Signal::sighup, b.cb()); }).ok());
  CHECK_FALSE(a.done());
  CHECK_FALSE(b.done());
  REQUIRE(f.run_until([&] { return a.done() && b.done(); }));
  CHECK(a.result()->signal == Signal::sigtstp);
  CHECK(a.result()->target_pgid == 556);
  CHECK(b.error() == broke);

  f.backend->session(id)->status = SessionStatus::exited_by_signal(9);
  Capture<SignalResult> c;
  Status refused = f.service.signal(o, id, Signal::sigint, c.cb());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error()->code == Code::SESSION_EXITED);
  Capture<SendResult> d;
  auto send = f.service.start_send(o, id, {}, d.cb());
  REQUIRE_FALSE(send.ok());
  CHECK(send.error()->code == Code::SESSION_EXITED);
  CHECK(f.service.list(o).at(0).status == SessionStatus::exited_by_signal(9));
  // An exited session still closes (and its kill reports it).
  CHECK(f.kill(o, id).result().value());
  f.turn();
  CHECK(c.calls() == 0);
  CHECK(d.calls() == 0);
}

TEST_CASE("owners: labels are display only, identity is exact") {
  Fixture f;
  Owner a = f.service.mint_owner("same");
  Owner b = f.service.mint_owner("same");
  Owner copy = a;
  CHECK(a.label() == "same");
  CHECK(a.valid());
  CHECK_FALSE(Owner{}.valid());
  CHECK(Owner{}.label().empty());
  CHECK(Owner{}.serial() == 0);
  CHECK(a.serial() != b.serial());
  CHECK(copy == a);
  CHECK_FALSE(a == b);
  CHECK(f.service.is_owner_live(a));
  CHECK_FALSE(f.service.is_owner_live(Owner{}));
  std::string id = f.spawn_ok(copy);  // a copy is the same owner
  CHECK(f.service.read(a, id).ok());
  CHECK(f.service.read(b, id).error()->code == Code::FOREIGN_SESSION);
}
