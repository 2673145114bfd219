// The scripted backend itself: its spawn, which honours (or, when scripted to, ignores) the
// spawn's abort signal, and the record accessors.
#include <utility>

#include "scripted_core.hpp"

namespace dshpty {

namespace {

// One spawn in flight. The abort subscription holds it weakly; the scheduled step strongly.
struct SpawnState {
  detail::ScriptedCore* core = nullptr;
  std::shared_ptr<detail::ScriptedCore> core_ref;  // to create sessions that share the core
  std::size_t record = 0;
  SpawnSpec spec;
  ScriptedSpawn script;
  SpawnCallback done;
  AbortSubscription subscription;
  std::uint64_t op = 0;
  bool finished = false;
};

ScriptedSpawnRecord& record_of(SpawnState& st) { return st.core->spawn_records[st.record]; }

// Completes the spawn: bookkeeping first, then `done` last (it may drop the backend).
void complete_spawn(const std::shared_ptr<SpawnState>& st,
                    Result<std::unique_ptr<BackendSession>> result) {
  st->finished = true;
  st->subscription.reset();
  ScriptedSpawnRecord& rec = record_of(*st);
  ++rec.completions;
  rec.completed = true;
  if (!result.ok()) rec.error = result.error();
  if (const auto& again = st->script.step.misbehave_call_again) {
    Error late = again->error ? again->error
                              : make_error(Code::BACKEND_FAILED, "scripted late spawn completion");
    SpawnCallback done_copy = st->done;
    detail::ScriptedCore* core = st->core;
    std::size_t index = st->record;
    core->schedule(core->spawn_ops, nullptr, again->turns, [core, index, done_copy, late](const Error&) {
      ++core->spawn_records[index].completions;
      done_copy(late);
    });
  }
  SpawnCallback done = std::move(st->done);
  st->done = nullptr;
  done(std::move(result));
}

void finish_as_scripted(const std::shared_ptr<SpawnState>& st, const Error& gate_error) {
  if (gate_error) return complete_spawn(st, gate_error);
  if (Error error = detail::step_error(st->script.step, "spawn")) return complete_spawn(st, error);
  complete_spawn(st, detail::make_scripted_session(st->core_ref, st->spec,
                                                   std::move(st->script.session)));
}

void finish_as_aborted(const std::shared_ptr<SpawnState>& st, const Error& reason) {
  if (st->script.on_abort == ScriptedAbortPolicy::honour_cleanup_fails) {
    Error cleanup = st->script.abort_cleanup_error
                        ? st->script.abort_cleanup_error
                        : make_error(Code::BACKEND_FAILED, "scripted abort cleanup failure");
    return complete_spawn(st, make_backend_cleanup_error(reason, std::move(cleanup)));
  }
  complete_spawn(st, reason);
}

}  // namespace

ScriptedBackend::ScriptedBackend(struct ev_loop* loop, std::string type)
    : core_(std::make_shared<detail::ScriptedCore>(loop, std::move(type))) {}

ScriptedBackend::~ScriptedBackend() = default;

const std::string& ScriptedBackend::type() const { return core_->type; }

void ScriptedBackend::spawn(SpawnSpec spec, SpawnCallback done) {
  detail::ScriptedCore& core = *core_;
  core.spawn_records.emplace_back();
  core.spawn_records.back().spec = spec;

  auto st = std::make_shared<SpawnState>();
  st->core = &core;
  st->core_ref = core_;
  st->record = core.spawn_records.size() - 1;
  st->spec = std::move(spec);
  st->done = std::move(done);
  if (!core.spawns.next.empty()) {
    st->script = std::move(core.spawns.next.front());
    core.spawns.next.pop_front();
  } else if (core.spawns.fallback) {
    st->script = *core.spawns.fallback;
  }
  // The state must not keep the core alive by itself (it sits in the core's own table).
  st->core_ref.reset();
  std::weak_ptr<detail::ScriptedCore> weak_core = core_;

  const bool honours = st->script.on_abort != ScriptedAbortPolicy::ignore;
  AbortSignal signal = st->spec.signal;
  if (signal.aborted()) {
    ScriptedSpawnRecord& rec = record_of(*st);
    rec.aborted_at_start = true;
    rec.abort_reason = signal.reason();
    if (honours) {
      Error reason = signal.reason();
      core.schedule_now(core.spawn_ops, [st, reason](const Error&) { finish_as_aborted(st, reason); });
      return;
    }
  } else {
    std::weak_ptr<SpawnState> weak = st;
    st->subscription = signal.subscribe([weak, honours](const Error& reason) {
      auto locked = weak.lock();
      if (!locked || locked->finished) return;
      ScriptedSpawnRecord& rec = record_of(*locked);
      rec.aborted_while_pending = true;
      rec.abort_reason = reason;
      if (!honours) return;
      // Stop waiting on the script; complete from the loop, never inside abort().
      detail::ScriptedCore* c = locked->core;
      c->spawn_ops.cancel(locked->op);
      locked->op = c->schedule_now(c->spawn_ops,
                                   [locked, reason](const Error&) { finish_as_aborted(locked, reason); });
    });
  }
  st->op = core.schedule(core.spawn_ops, st->script.step.gate, st->script.step.turns,
                         [st, weak_core](const Error& gate_error) {
                           st->core_ref = weak_core.lock();  // alive: we run from its loop
                           finish_as_scripted(st, gate_error);
                           st->core_ref.reset();
                         });
}

ScriptedQueue<ScriptedSpawn>& ScriptedBackend::spawns() { return core_->spawns; }

ScriptedSessionScript& ScriptedBackend::session_script(const std::string& session_id) {
  return core_->script_of(session_id);
}

ScriptedSessionScript& ScriptedBackend::every_session() { return core_->every; }

const std::deque<ScriptedSpawnRecord>& ScriptedBackend::spawn_records() const {
  return core_->spawn_records;
}

ScriptedSessionRecord* ScriptedBackend::session(const std::string& session_id) {
  auto it = core_->sessions.find(session_id);
  return it == core_->sessions.end() ? nullptr : &it->second;
}

const ScriptedSessionRecord* ScriptedBackend::session(const std::string& session_id) const {
  auto it = core_->sessions.find(session_id);
  return it == core_->sessions.end() ? nullptr : &it->second;
}

std::vector<std::string> ScriptedBackend::session_ids() const { return core_->session_order; }

std::size_t ScriptedBackend::live_sessions() const { return core_->live_sessions; }

std::size_t ScriptedBackend::pending() const { return core_->live_ops; }

bool ScriptedBackend::all_processes_gone() const {
  for (const auto& [id, rec] : core_->sessions) {
    if (!rec.alive.empty()) return false;
  }
  return true;
}

const std::vector<std::string>& ScriptedBackend::close_log() const { return core_->close_log; }

}  // namespace dshpty
