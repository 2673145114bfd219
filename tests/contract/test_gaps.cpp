// Beyond issue 2's list: corners of the contract the numbered cases do not pin down —
// operations in flight across a close,
// ordering with many sessions, disposal racing a kill, and the destructor's precondition.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include "contract_helpers.hpp"

using namespace contract;

TEST_CASE("gap: records() and list() keep creation order past ten sessions") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::vector<std::string> made;
  for (int i = 0; i < 13; ++i) made.push_back(f.spawn_ok(o));
  std::vector<std::string> table;
  for (const auto& r : f.service.records()) table.push_back(r.id);
  CHECK(table == made);  // "in id order (oldest first)": oldest first, not string order
  CHECK(ids_of(f.service.list(o)) == made);
}

TEST_CASE("gap: aborting the caller's signal after publication changes nothing") {
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

TEST_CASE("gap: caller abort and owner disposal together: the caller's exact reason wins") {
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

TEST_CASE("gap: unregistering a backend while its spawn is pending: the spawn still lands") {
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

TEST_CASE("gap: owner disposal joins a kill already in flight, and reports its failure") {
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

TEST_CASE("gap: owner disposal with a kill in flight that succeeds") {
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

TEST_CASE("gap: disposal of an owner whose published session is cleanup_failed ends its activity") {
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

TEST_CASE("gap: service disposal during an owner disposal: both complete") {
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

TEST_CASE("gap: owners — labels are display only, identity is exact") {
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

TEST_CASE("gap: destroying an idle service releases its published sessions without waiting") {
  Loop l;
  auto backend = std::make_shared<ScriptedBackend>(l.loop);
  std::string id;
  {
    Service service(l.loop);
    REQUIRE(service.register_backend(backend).ok());
    Owner o = service.mint_owner("agent");
    Capture<SpawnResult> sp;
    SpawnOptions opts;
    opts.type = "scripted";
    service.spawn(o, opts, sp.cb());
    REQUIRE(run_until(l.loop, [&] { return sp.done(); }));
    REQUIRE(sp.ok());
    id = sp.result()->session.id;
    turn(l.loop);
  }
  CHECK(backend->session(id)->destroyed);
  CHECK(backend->session(id)->close_calls == 0);
  CHECK_FALSE(backend->session(id)->killed_on_destroy.empty());
  CHECK(backend->live_sessions() == 0);
}

TEST_CASE("gap: destroying a service with work in flight aborts the process with a message") {
  int err_pipe[2];
  REQUIRE(pipe2(err_pipe, O_CLOEXEC) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child must die of the abort itself, not in doctest's crash reporter.
    std::signal(SIGABRT, SIG_DFL);
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, 1);
    dup2(err_pipe[1], 2);
    close(err_pipe[0]);
    struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
    auto backend = std::make_shared<ScriptedBackend>(loop);
    auto gate = ScriptedGate::make();
    backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate)));
    {
      Service service(loop);
      (void)service.register_backend(backend);
      SpawnOptions opts;
      opts.type = "scripted";
      service.spawn(service.mint_owner("agent"), opts, [](Result<SpawnResult>) {});
    }  // must abort here
    _exit(0);
  }
  close(err_pipe[1]);
  std::string err;
  char buf[256];
  ssize_t n;
  while ((n = read(err_pipe[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<std::size_t>(n));
  close(err_pipe[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(err.find("dshpty") != std::string::npos);
}
