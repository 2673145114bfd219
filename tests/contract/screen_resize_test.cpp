// Screen reads and resize through the service (docs/contract.md, "Screens and resize"):
// fenced like read and signal, the size checked before the backend sees it, the backend's
// answer passed through as is, and a backend without a screen saying so.
#include "contract_helpers.hpp"

using namespace contract;

namespace {

// Everything but screen and resize, forwarded to a scripted session: a backend without
// terminals, which keeps BackendSession's defaults.
class NoScreenSession final : public BackendSession {
 public:
  explicit NoScreenSession(std::unique_ptr<BackendSession> inner) : inner_(std::move(inner)) {}
  const std::string& motd() const override { return inner_->motd(); }
  std::optional<int> pid() const override { return inner_->pid(); }
  SessionStatus status() const override { return inner_->status(); }
  Result<std::unique_ptr<BackendSendOperation>> start_send(SendRequest request,
                                                           Callback<SendResult> done) override {
    return inner_->start_send(std::move(request), std::move(done));
  }
  Result<ReadPage> read(const ReadRequest& request) override { return inner_->read(request); }
  Status signal(Signal signal, Callback<SignalResult> done) override {
    return inner_->signal(signal, std::move(done));
  }
  void close(std::string reason, Callback<void> done) override {
    inner_->close(std::move(reason), std::move(done));
  }

 private:
  std::unique_ptr<BackendSession> inner_;
};

class NoScreenBackend final : public Backend {
 public:
  explicit NoScreenBackend(std::shared_ptr<ScriptedBackend> inner) : inner_(std::move(inner)) {}
  const std::string& type() const override { return inner_->type(); }
  void spawn(SpawnSpec spec, SpawnCallback done) override {
    inner_->spawn(std::move(spec), [done](Result<std::unique_ptr<BackendSession>> r) {
      if (!r.ok()) return done(r.error());
      done(std::unique_ptr<BackendSession>(new NoScreenSession(std::move(r.value()))));
    });
  }

 private:
  std::shared_ptr<ScriptedBackend> inner_;
};

// The code of a failed call, or nullopt when it succeeded.
template <class T>
std::optional<Code> failure(const Result<T>& r) {
  if (r.ok()) return std::nullopt;
  return r.error()->code;
}

}  // namespace

TEST_CASE("screen and resize: fenced to the live owner, unknown ids NO_SESSION, nothing reaches the backend") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  Owner intruder = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  const ScriptedSessionRecord* rec = f.backend->session(id);

  auto check_fenced = [&](const Owner& who, const std::string& target, Code code) {
    CAPTURE(target);
    CAPTURE(code_name(code));
    auto shown = f.service.screen(who, target);
    CHECK(failure(shown) == code);
    CHECK(failure(f.service.resize(who, target, 30, 90)) == code);
    // The fence comes before the size check: a bad size changes nothing here.
    CHECK(failure(f.service.resize(who, target, 0, 5000)) == code);
    // And it says what read says.
    CHECK(failure(f.service.read(who, target)) == code);
    return shown.ok() ? Error{} : shown.error();
  };
  CHECK(check_fenced(intruder, id, Code::FOREIGN_SESSION)->message ==
        "PTY session ID belongs to another agent");
  CHECK(check_fenced(o, "pty-does-not-exist", Code::NO_SESSION)->message == "unknown PTY session ID");
  check_fenced(intruder, "pty-does-not-exist", Code::NO_SESSION);
  check_fenced(Owner{}, id, Code::OWNER_NOT_LIVE);
  Service other(f.loop);
  check_fenced(other.mint_owner("agent"), id, Code::OWNER_NOT_LIVE);  // minted elsewhere
  CHECK(rec->screen_calls == 0);
  CHECK(rec->resize_calls == 0);
  CHECK(rec->read_calls == 0);

  // A disposed owner is not live, even for its own former sessions (which are gone).
  Owner gone = f.service.mint_owner("gone");
  std::string gone_id = f.spawn_ok(gone);
  auto d = f.dispose_owner(gone);
  REQUIRE(f.run_until([&] { return d.done(); }));
  REQUIRE(d.ok());
  check_fenced(gone, gone_id, Code::OWNER_NOT_LIVE);
  CHECK(f.backend->session(gone_id)->screen_calls == 0);
  CHECK(f.backend->session(gone_id)->resize_calls == 0);

  // A closed id is NO_SESSION, for its owner too.
  CHECK(f.kill(o, id).result().value());
  check_fenced(o, id, Code::NO_SESSION);
  CHECK(rec->screen_calls == 0);
  CHECK(rec->resize_calls == 0);
}

TEST_CASE("screen and resize: a closing or cleanup_failed session refuses resize, shows its screen as read does") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  const ScriptedSessionRecord* rec = f.backend->session(id);
  auto gate = f.gate();
  Error failed = make_error(Code::BACKEND_FAILED, "close failed");
  f.backend->session_script(id).closes.push(ScriptedStep::fail(failed).on_gate(gate));

  Capture<bool> killed;
  REQUIRE(f.service.kill(o, id, killed.cb()).ok());
  for (RecordState state : {RecordState::closing, RecordState::cleanup_failed}) {
    CAPTURE(record_state_name(state));
    REQUIRE(record_of(f.service, id)->state == state);
    const int screens_before = rec->screen_calls;
    const int reads_before = rec->read_calls;
    Status refused = f.service.resize(o, id, 30, 90);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error()->code == Code::SESSION_CLOSING);
    // The state is checked before the size.
    CHECK(failure(f.service.resize(o, id, 0, 0)) == Code::SESSION_CLOSING);
    CHECK(rec->resize_calls == 0);
    // A screen read, like a read, still reaches the backend: there is still a screen.
    CHECK(f.service.read(o, id).ok());
    auto shown = f.service.screen(o, id);
    REQUIRE(shown.ok());
    CHECK(shown->rows == 24);
    CHECK(rec->screen_calls == screens_before + 1);
    CHECK(rec->read_calls == reads_before + 1);
    if (state == RecordState::closing) {
      gate->open();
      REQUIRE(f.run_until([&] { return killed.done(); }));
      CHECK(contains_error(killed.error(), failed));
    }
  }
  // Once a retried close succeeds, the id is gone.
  CHECK(f.kill(o, id).result().value());
  CHECK(failure(f.service.resize(o, id, 30, 90)) == Code::NO_SESSION);
  CHECK(failure(f.service.screen(o, id)) == Code::NO_SESSION);
  CHECK(rec->resize_calls == 0);
}

TEST_CASE("resize: sizes outside 1..4096 fail INVALID_ARGUMENT before the backend; the bounds pass") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  const ScriptedSessionRecord* rec = f.backend->session(id);
  const std::vector<ScriptedSize> invalid = {{0, 80},    {24, 0},    {0, 0},    {4097, 80},
                                             {24, 4097}, {5000, 80}, {24, 5000}, {5000, 5000},
                                             {4097, 0},  {~0u, 80}};
  for (ScriptedSize size : invalid) {
    CAPTURE(size.rows);
    CAPTURE(size.cols);
    Status s = f.service.resize(o, id, size.rows, size.cols);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error()->code == Code::INVALID_ARGUMENT);
  }
  CHECK(rec->resize_calls == 0);
  CHECK(f.service.screen(o, id)->rows == 24);

  for (ScriptedSize size : {ScriptedSize{1, 1}, ScriptedSize{4096, 4096}, ScriptedSize{1, 4096}}) {
    CHECK(f.service.resize(o, id, size.rows, size.cols).ok());
  }
  CHECK(rec->resizes == std::vector<ScriptedSize>{{1, 1}, {4096, 4096}, {1, 4096}});
}

TEST_CASE("resize: reaches the backend once with the caller's numbers, also while a send is live") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  const ScriptedSessionRecord* rec = f.backend->session(id);

  Status s = f.service.resize(o, id, 33, 121);
  REQUIRE(s.ok());
  CHECK(rec->resizes == std::vector<ScriptedSize>{{33, 121}});  // rows first, then cols
  auto shown = f.service.screen(o, id);
  REQUIRE(shown.ok());
  CHECK(shown->rows == 33);
  CHECK(shown->cols == 121);
  CHECK(rec->screen_calls == 1);

  // A full-screen program runs inside a send: resizing and looking at it must work then.
  auto gate = f.gate();
  f.backend->session_script(id).sends.push(ScriptedSend::with(ScriptedStep::gated(gate)));
  Capture<SendResult> live;
  SendRequest vim;
  vim.text = "vim";
  auto send = f.service.start_send(o, id, vim, live.cb());
  REQUIRE(send.ok());
  REQUIRE(record_of(f.service, id)->state == RecordState::sending);
  CHECK(f.service.resize(o, id, 50, 200).ok());
  CHECK(f.service.screen(o, id)->cols == 200);
  CHECK(rec->resizes == std::vector<ScriptedSize>{{33, 121}, {50, 200}});
  CHECK(rec->resize_calls == 2);
  gate->open();
  REQUIRE(f.run_until([&] { return live.done(); }));
  CHECK(live.ok());
  CHECK(rec->resize_calls == 2);
}

TEST_CASE("screen and resize: the backend's failures pass through unchanged") {
  Fixture f;
  Owner o = f.service.mint_owner("agent");
  std::string id = f.spawn_ok(o);
  const ScriptedSessionRecord* rec = f.backend->session(id);
  Error resize_broke = make_error(Code::BACKEND_FAILED, "TIOCSWINSZ failed");
  Error screen_broke = make_error(Code::BACKEND_FAILED, "emulator broke");
  f.backend->session_script(id).resizes.push(resize_broke);
  f.backend->session_script(id).screens.push_back(screen_broke);

  Status s = f.service.resize(o, id, 30, 90);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error() == resize_broke);  // the same object
  auto shown = f.service.screen(o, id);
  REQUIRE_FALSE(shown.ok());
  CHECK(shown.error() == screen_broke);
  CHECK(rec->resize_calls == 1);
  CHECK(rec->screen_calls == 1);
  CHECK(f.service.screen(o, id)->rows == 24);  // the failed resize changed nothing
  CHECK(record_of(f.service, id)->state == RecordState::published);

  // An exited session: the backend's own SESSION_EXITED.
  f.backend->session(id)->status = SessionStatus::exited_with_code(0);
  CHECK(failure(f.service.resize(o, id, 30, 90)) == Code::SESSION_EXITED);
  CHECK(rec->resize_calls == 2);
}

TEST_CASE("screen and resize: a backend without a screen says INVALID_ARGUMENT") {
  Fixture f;
  auto plain = std::make_shared<ScriptedBackend>(f.loop, "plain");
  REQUIRE(f.service.register_backend(std::make_shared<NoScreenBackend>(plain)).ok());
  Owner o = f.service.mint_owner("agent");
  Capture<SpawnResult> spawned = f.spawn(o, f.options(std::nullopt, {}, "plain"));
  REQUIRE(spawned.ok());
  const std::string id = spawned.result()->session.id;

  auto shown = f.service.screen(o, id);
  REQUIRE_FALSE(shown.ok());
  CHECK(shown.error()->code == Code::INVALID_ARGUMENT);
  Status s = f.service.resize(o, id, 30, 90);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error()->code == Code::INVALID_ARGUMENT);
  // The service's own checks still come first.
  CHECK(failure(f.service.resize(o, id, 0, 90)) == Code::INVALID_ARGUMENT);
  CHECK(failure(f.service.screen(f.service.mint_owner("x"), id)) == Code::FOREIGN_SESSION);
  // The session is otherwise fine.
  CHECK(f.service.read(o, id).ok());
  CHECK(record_of(f.service, id)->state == RecordState::published);
  CHECK(plain->session(id)->resize_calls == 0);
  CHECK(plain->session(id)->screen_calls == 0);
  CHECK(f.kill(o, id).result().value());
}
