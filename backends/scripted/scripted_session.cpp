// The scripted backend's sessions and send operations.
//
// A session's live state (SessionLive) owns the table of its scheduled steps; the
// BackendSession destroys it, so nothing scheduled for a destroyed session ever runs. Code
// that calls out to the service checks a weak reference between calls, because a callback
// may destroy the session it belongs to.
#include <csignal>
#include <utility>

#include "scripted_core.hpp"
#include "text/truncation.hpp"

namespace dshpty::detail {

namespace {

struct SessionLive;

struct SendState {
  std::shared_ptr<ScriptedCore> core;  // keeps the record alive for a late read_output/cancel
  ScriptedSessionRecord* rec = nullptr;
  std::weak_ptr<SessionLive> live;
  ScriptedSend script;
  std::deque<OutputDelta> output;
  Callback<SendResult> done;
  std::optional<std::size_t> cap;  // the request's max_bytes
  std::uint64_t op = 0;
  bool settled = false;
  bool cancel_settling = false;
};

struct SessionLive : std::enable_shared_from_this<SessionLive> {
  std::shared_ptr<ScriptedCore> core;
  ScriptedSessionRecord* rec = nullptr;
  std::vector<Callback<void>> joiners;  // the close in flight and every call that joined it
  bool closing = false;
  std::shared_ptr<SendState> send;      // the live send, if any
  OpTable ops;                          // last: destroyed first

  ScriptedSessionScript& script() { return core->script_of(rec->id); }

  void settle_send(const std::shared_ptr<SendState>& st, Result<SendResult> result) {
    if (st->settled) return;
    // The scripted viewport is cut to the request's cap as the shell backend cuts its own.
    if (result && st->cap) {
      text::Cut cut = text::cut_to_fit(result->viewport, *st->cap);
      if (cut.truncated) {
        result->viewport = std::move(cut.text);
        result->truncated = true;
        result->omitted_lines += cut.omitted.lines;
        result->omitted_bytes += cut.omitted.bytes;
      }
    }
    st->settled = true;
    ops.cancel(st->op);
    if (send == st) send.reset();
    ++rec->send_completions;
    Callback<SendResult> done = std::move(st->done);
    st->done = nullptr;
    if (const auto& again = st->script.step.misbehave_call_again) {
      Result<SendResult> late = again->error ? Result<SendResult>(again->error) : result;
      core->schedule(ops, nullptr, again->turns, [done, late](const Error&) { done(late); });
    }
    done(std::move(result));  // last: it may destroy this session
  }

  void finish_close(const ScriptedStep& step, const Error& gate_error) {
    Error error = gate_error ? gate_error : step_error(step, "close");
    closing = false;
    auto joined = std::move(joiners);
    joiners.clear();
    rec->close_results.push_back(error);
    if (!error) {
      rec->alive.clear();
      rec->closed = true;
      rec->status = SessionStatus::exited_by_signal(SIGHUP);
    }
    if (const auto& again = step.misbehave_call_again) {
      Status late = again->error ? Status(again->error) : Status();
      core->schedule(ops, nullptr, again->turns, [joined, late](const Error&) {
        for (const auto& fn : joined) fn(late);
      });
    }
    std::weak_ptr<SessionLive> alive = weak_from_this();
    Status status = error ? Status(error) : Status();
    for (const auto& fn : joined) {
      if (alive.expired()) return;  // a joiner destroyed the session: nothing more may run
      fn(status);
    }
  }
};

class ScriptedSendOperation final : public BackendSendOperation {
 public:
  explicit ScriptedSendOperation(std::shared_ptr<SendState> st) : st_(std::move(st)) {}

  OutputDelta read_output() override {
    ++st_->rec->read_output_calls;
    if (st_->output.empty()) return {};
    OutputDelta next = std::move(st_->output.front());
    st_->output.pop_front();
    return next;
  }

  bool cancel() override {
    ++st_->rec->cancel_calls;
    auto live = st_->live.lock();
    if (st_->settled || !live) return false;
    if (st_->script.settle_on_cancel && !st_->cancel_settling) {
      st_->cancel_settling = true;
      live->ops.cancel(st_->op);
      SendResult result = st_->script.result;
      result.wait_reason = st_->script.cancel_wait_reason;
      std::shared_ptr<SendState> st = st_;
      SessionLive* session = live.get();
      st_->op = live->core->schedule_now(live->ops, [session, st, result](const Error&) {
        session->settle_send(st, result);
      });
    }
    return true;
  }

 private:
  std::shared_ptr<SendState> st_;
};

class ScriptedSession final : public BackendSession {
 public:
  explicit ScriptedSession(std::shared_ptr<SessionLive> live) : live_(std::move(live)) {}

  ~ScriptedSession() override {
    ScriptedSessionRecord* rec = live_->rec;
    rec->destroyed = true;
    rec->killed_on_destroy = std::move(rec->alive);
    rec->alive.clear();
    --live_->core->live_sessions;
    // Keep the core alive past the live state: its ops' destructors count down in it.
    std::shared_ptr<ScriptedCore> core = live_->core;
    live_.reset();
  }

  const std::string& motd() const override { return live_->rec->motd; }
  std::optional<int> pid() const override { return live_->rec->pid; }
  SessionStatus status() const override { return live_->rec->status; }

  Result<std::unique_ptr<BackendSendOperation>> start_send(SendRequest request,
                                                           Callback<SendResult> done) override {
    SessionLive& live = *live_;
    ScriptedSessionRecord& rec = *live.rec;
    rec.sends.push_back(request);
    ++rec.start_send_calls;
    std::optional<ScriptedSend> script = take_script(live.script().sends, live.core->every.sends);
    if (script && script->step.kind == ScriptedStep::Kind::reject) {
      return script->step.error ? script->step.error : make_error(Code::SESSION_EXITED);
    }
    if (!script && !rec.status.running()) return make_error(Code::SESSION_EXITED);
    if (!script) script.emplace();

    auto st = std::make_shared<SendState>();
    st->core = live.core;
    st->rec = &rec;
    st->live = live_;
    st->script = std::move(*script);
    st->output.assign(st->script.output.begin(), st->script.output.end());
    st->done = std::move(done);
    st->cap = request.max_bytes;
    live.send = st;
    SessionLive* session = &live;
    const ScriptedStep& step = st->script.step;
    st->op = live.core->schedule(live.ops, step.gate, step.turns, [session, st](const Error& gate_error) {
      Error error = gate_error ? gate_error : step_error(st->script.step, "send");
      if (error) return session->settle_send(st, error);
      session->settle_send(st, st->script.result);
    });
    return std::unique_ptr<BackendSendOperation>(new ScriptedSendOperation(st));
  }

  Result<ReadPage> read(const ReadRequest& request) override {
    ScriptedSessionRecord& rec = *live_->rec;
    ++rec.read_calls;
    if (request.offset < 0) return make_error(Code::INVALID_ARGUMENT, "read offset must be >= 0");
    if (request.count < 1) return make_error(Code::INVALID_ARGUMENT, "read count must be >= 1");
    for (ScriptedSessionScript* s : {&live_->script(), &live_->core->every}) {
      if (!s->reads.empty()) {
        Result<ReadPage> page = std::move(s->reads.front());
        s->reads.pop_front();
        return page;
      }
    }
    return rec.page;
  }

  Status signal(Signal signal, Callback<SignalResult> done) override {
    SessionLive& live = *live_;
    ScriptedSessionRecord& rec = *live.rec;
    rec.signals.push_back(signal);
    ++rec.signal_calls;
    std::optional<ScriptedSignal> script =
        take_script(live.script().signals, live.core->every.signals);
    if (script && script->step.kind == ScriptedStep::Kind::reject) {
      return script->step.error ? script->step.error : make_error(Code::SESSION_EXITED);
    }
    if (!script && !rec.status.running()) return make_error(Code::SESSION_EXITED);
    if (!script) script.emplace();

    SignalResult result{signal, script->target_pgid != 0 ? script->target_pgid : rec.pid.value_or(0)};
    ScriptedSessionRecord* recp = &rec;
    ScriptedCore* core = live.core.get();
    OpTable* ops = &live.ops;
    ScriptedStep step = script->step;
    live.core->schedule(live.ops, step.gate, step.turns,
                        [recp, core, ops, step, result, done](const Error& gate_error) {
                          ++recp->signal_completions;
                          Error error = gate_error ? gate_error : step_error(step, "signal");
                          Result<SignalResult> outcome =
                              error ? Result<SignalResult>(error) : Result<SignalResult>(result);
                          if (const auto& again = step.misbehave_call_again) {
                            Result<SignalResult> late =
                                again->error ? Result<SignalResult>(again->error) : outcome;
                            core->schedule(*ops, nullptr, again->turns,
                                           [done, late](const Error&) { done(late); });
                          }
                          done(std::move(outcome));
                        });
    return {};
  }

  Result<ScreenSnapshot> screen() override {
    ++live_->rec->screen_calls;
    for (ScriptedSessionScript* s : {&live_->script(), &live_->core->every}) {
      if (!s->screens.empty()) {
        Result<ScreenSnapshot> shown = std::move(s->screens.front());
        s->screens.pop_front();
        return shown;
      }
    }
    return live_->rec->screen;
  }

  // No range check: the service validated the size, and a test of the service must see
  // exactly what reached the backend.
  Status resize(unsigned rows, unsigned cols) override {
    SessionLive& live = *live_;
    ScriptedSessionRecord& rec = *live.rec;
    rec.resizes.push_back({rows, cols});
    ++rec.resize_calls;
    std::optional<Status> script = take_script(live.script().resizes, live.core->every.resizes);
    if (!script && !rec.status.running()) return make_error(Code::SESSION_EXITED);
    if (script && !script->ok()) return *script;
    rec.screen.rows = rows;
    rec.screen.cols = cols;
    return {};
  }

  void close(std::string reason, Callback<void> done) override {
    SessionLive& live = *live_;
    ScriptedSessionRecord& rec = *live.rec;
    live.core->close_log.push_back(rec.id + ": " + reason);
    rec.close_reasons.push_back(std::move(reason));
    ++rec.close_calls;
    live.joiners.push_back(std::move(done));
    if (live.closing) return;  // joins the close in flight
    live.closing = true;
    ++rec.close_attempts;
    ScriptedStep step = take_script(live.script().closes, live.core->every.closes)
                            .value_or(ScriptedStep::succeed());
    SessionLive* session = &live;
    // A close settles a live send first: the tree is going away under it.
    if (live.send && !live.send->settled) {
      std::shared_ptr<SendState> st = live.send;
      live.ops.cancel(st->op);
      SendResult result = st->script.result;
      result.wait_reason = WaitReason::session_exit;
      // Not at a prompt: a shell's result carries no exit code, cwd or hidden input then.
      result.exit_code.reset();
      result.cwd.reset();
      result.input_hidden = false;
      result.session_status = SessionStatus::exited_by_signal(SIGHUP);
      st->op = live.core->schedule_now(live.ops, [session, st, result](const Error&) {
        session->settle_send(st, result);
      });
    }
    live.core->schedule(live.ops, step.gate, step.turns, [session, step](const Error& gate_error) {
      session->finish_close(step, gate_error);
    });
  }

 private:
  std::shared_ptr<SessionLive> live_;
};

}  // namespace

std::unique_ptr<BackendSession> make_scripted_session(const std::shared_ptr<ScriptedCore>& core,
                                                      const SpawnSpec& spec,
                                                      ScriptedSessionConfig config) {
  ScriptedSessionRecord& rec = core->sessions[spec.session_id];
  rec = ScriptedSessionRecord{};
  rec.id = spec.session_id;
  rec.owner = spec.owner;
  rec.motd = std::move(config.motd);
  rec.pid = config.pid;
  rec.status = config.status;
  rec.page = std::move(config.page);
  rec.screen = std::move(config.screen);
  rec.alive = std::move(config.processes);
  if (rec.alive.empty()) rec.alive.insert(rec.pid ? *rec.pid : core->next_fake_pid++);
  core->session_order.push_back(spec.session_id);
  ++core->live_sessions;

  // The spawn's own scripts join whatever the test already set for this id.
  ScriptedSessionScript& script = core->script_of(spec.session_id);
  auto merge = [](auto& into, auto& from) {
    for (auto& item : from.next) into.next.push_back(std::move(item));
    if (!into.fallback && from.fallback) into.fallback = std::move(from.fallback);
  };
  merge(script.closes, config.script.closes);
  merge(script.sends, config.script.sends);
  merge(script.signals, config.script.signals);
  merge(script.resizes, config.script.resizes);
  for (auto& page : config.script.reads) script.reads.push_back(std::move(page));
  for (auto& shown : config.script.screens) script.screens.push_back(std::move(shown));

  auto live = std::make_shared<SessionLive>();
  live->core = core;
  live->rec = &rec;
  return std::make_unique<ScriptedSession>(std::move(live));
}

}  // namespace dshpty::detail
