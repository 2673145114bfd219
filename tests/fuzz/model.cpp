// The model's transitions, one per contract rule. Comments cite the rule being encoded.
#include "model.hpp"

#include <algorithm>

namespace dshpty::fuzz {

// ---------------------------------------------------------------- error matching

ErrorMatch ErrorMatch::exactly(Error error) {
  ErrorMatch m;
  m.same = std::move(error);
  return m;
}

ErrorMatch ErrorMatch::of(Code code) { return of(code, std::string(default_message(code))); }

ErrorMatch ErrorMatch::of(Code code, std::string message) {
  ErrorMatch m;
  m.code = code;
  m.message = std::move(message);
  return m;
}

ErrorMatch ErrorMatch::code_only(Code code) {
  ErrorMatch m;
  m.code = code;
  return m;
}

std::string describe(const ErrorMatch& want) {
  if (want.same) return "the exact error {" + describe(want.same) + "}";
  std::string out = want.code ? std::string(code_name(*want.code)) : std::string("any code");
  if (want.message) out += " \"" + *want.message + "\"";
  if (want.check_children) {
    out += " with children [";
    for (std::size_t i = 0; i < want.children.size(); ++i)
      out += (i ? "; " : "") + describe(want.children[i]);
    out += "]";
  }
  return out;
}

std::string mismatch(const ErrorMatch& want, const Error& error) {
  if (!error) return "no error, want " + describe(want);
  if (want.same) {
    if (want.same == error) return "";
    return "got {" + describe(error) + "}, want " + describe(want);
  }
  if (want.code && error->code != *want.code)
    return "got {" + describe(error) + "}, want " + describe(want);
  if (want.message && error->message != *want.message)
    return "got message \"" + error->message + "\", want " + describe(want);
  if (want.check_children) {
    if (error->errors.size() != want.children.size())
      return "got {" + describe(error) + "}, want " + describe(want);
    std::vector<bool> used(error->errors.size(), false);
    for (const ErrorMatch& child : want.children) {
      bool found = false;
      for (std::size_t i = 0; i < error->errors.size() && !found; ++i) {
        if (!used[i] && mismatch(child, error->errors[i]).empty()) used[i] = found = true;
      }
      if (!found) return "got {" + describe(error) + "}, want " + describe(want);
    }
  }
  return "";
}

std::string_view completion_kind_name(CompletionKind kind) noexcept {
  switch (kind) {
    case CompletionKind::spawn: return "spawn";
    case CompletionKind::send: return "send";
    case CompletionKind::signal: return "signal";
    case CompletionKind::kill: return "kill";
    case CompletionKind::dispose_owner: return "dispose_owner";
    case CompletionKind::dispose: return "dispose";
  }
  return "?";
}

// ---------------------------------------------------------------- bookkeeping

int Model::add_owner(Owner handle, bool minted_here) {
  // "once disposing, the owner is minted not live" (service.hpp).
  owners.push_back(OwnerM{std::move(handle), minted_here, minted_here && !disposing, -1});
  return static_cast<int>(owners.size()) - 1;
}

int Model::add_instance(std::string type) {
  instance_types.push_back(std::move(type));
  return static_cast<int>(instance_types.size()) - 1;
}

int Model::add_caller() {
  callers.emplace_back();
  return static_cast<int>(callers.size()) - 1;
}

int Model::new_token(CompletionKind kind, std::string label) {
  completions.push_back(Completion{kind, std::move(label), Phase::pending, {}});
  return static_cast<int>(completions.size()) - 1;
}

void Model::violation(const std::string& category, const std::string& message) {
  violations.push_back("[" + category + "] " + message);
}

void Model::due(int token, Expect expect) {
  Completion& c = completions[static_cast<std::size_t>(token)];
  if (c.phase != Phase::pending) {
    // The model decided twice: a bug in the model or a service event it did not foresee.
    violation("model", c.label + " decided twice");
    return;
  }
  c.phase = Phase::due;
  c.expect = std::move(expect);
}

void Model::due_error(int token, ErrorMatch error) {
  Expect e;
  e.error = std::move(error);
  due(token, std::move(e));
}

RecordM* Model::find(std::string_view id) {
  for (auto& rec : records)
    if (rec->id == id) return rec.get();
  return nullptr;
}

const RecordM* Model::find(std::string_view id) const {
  for (const auto& rec : records)
    if (rec->id == id) return rec.get();
  return nullptr;
}

bool Model::has_activity(int owner) const {
  // "true while any record of that owner is in any state but closed" (closed = erased).
  for (const auto& rec : records)
    if (rec->owner == owner) return true;
  return false;
}

int Model::instance_of(const std::string& type) const {
  for (int inst : registered)
    if (instance_types[static_cast<std::size_t>(inst)] == type) return inst;
  return -1;
}

bool Model::name_taken(int owner, const std::string& name) const {
  // "name already used by a published session of this owner, or by a spawn of this owner
  // still in setup" — a spawn whose rollback is in flight has not completed, so it is still
  // setting up; an unpublished record that only holds a cleanup failure holds no name.
  for (const auto& rec : records)
    if (rec->owner == owner && rec->holds_name() && *rec->name == name) return true;
  return false;
}

// ---------------------------------------------------------------- registry

std::optional<Code> Model::on_register(int instance) {
  const std::string& type = instance_types[static_cast<std::size_t>(instance)];
  if (type.empty()) return Code::INVALID_ARGUMENT;
  if (disposing) return Code::SERVICE_DISPOSING;
  if (instance_of(type) >= 0) return Code::DUPLICATE_BACKEND;
  registered.push_back(instance);
  registrations.emplace_back(instance, false);
  return std::nullopt;
}

bool Model::on_unregister(int reg) {
  // "release unregisters only if the table still holds that exact backend".
  auto& [instance, spent] = registrations[static_cast<std::size_t>(reg)];
  if (spent) return false;
  auto it = std::find(registered.begin(), registered.end(), instance);
  if (it == registered.end()) return false;
  registered.erase(it);
  spent = true;
  return true;
}

std::vector<std::string> Model::backend_types() const {
  std::vector<std::string> out;
  for (int inst : registered) out.push_back(instance_types[static_cast<std::size_t>(inst)]);
  return out;
}

// ---------------------------------------------------------------- spawn

bool Model::on_spawn(int token, int owner, const std::string& type,
                     const std::optional<std::string>& name, int caller) {
  // The contract's check order, each failing through the completion.
  if (disposing) return due_error(token, ErrorMatch::of(Code::SERVICE_DISPOSING)), false;
  if (caller >= 0 && callers[static_cast<std::size_t>(caller)].reason)
    return due_error(token, ErrorMatch::exactly(callers[static_cast<std::size_t>(caller)].reason)), false;
  if (!owners[static_cast<std::size_t>(owner)].live)
    return due_error(token, ErrorMatch::of(Code::OWNER_NOT_LIVE)), false;
  const int instance = instance_of(type);
  if (instance < 0) return due_error(token, ErrorMatch::code_only(Code::NO_BACKEND)), false;
  if (name && name->empty()) return due_error(token, ErrorMatch::code_only(Code::INVALID_ARGUMENT)), false;
  if (name && name_taken(owner, *name))
    return due_error(token, ErrorMatch::of(Code::DUPLICATE_NAME,
                                           "PTY session name \"" + *name + "\" already exists for this owner")),
           false;
  pending_spawn_ = PendingSpawn{token, owner, instance, caller, type, name};
  return true;
}

void Model::on_backend_spawn_called(int instance, const SpawnSpec& spec) {
  if (!pending_spawn_) {
    violation("unexpected-spawn", "backend spawn called for " + spec.session_id + " outside an accepted spawn()");
    return;
  }
  PendingSpawn p = *pending_spawn_;
  pending_spawn_.reset();
  if (instance != p.instance)
    violation("wrong-backend", "spawn went to backend instance " + std::to_string(instance) + ", want " +
                                   std::to_string(p.instance));
  // "session id ... unique for the service's life. Never reused."
  if (spec.session_id.empty() || ids_ever.count(spec.session_id))
    violation("id-reused", "session id \"" + spec.session_id + "\" was minted before (or is empty)");
  if (!(spec.owner == owners[static_cast<std::size_t>(p.owner)].handle))
    violation("spawn-spec", "the backend got another owner for " + spec.session_id);
  if (spec.request.name != p.name) violation("spawn-spec", "the backend got another name for " + spec.session_id);
  if (spec.signal.aborted()) violation("spawn-spec", "the backend's signal was aborted at spawn");
  ids_ever.insert(spec.session_id);

  auto rec = std::make_unique<RecordM>();
  rec->id = spec.session_id;
  rec->owner = p.owner;
  rec->name = p.name;
  rec->type = p.type;
  rec->instance = p.instance;
  rec->spawn_token = p.token;
  rec->caller = p.caller;
  rec->backend_signal = spec.signal;
  records.push_back(std::move(rec));
}

void Model::on_backend_spawned(const std::string& id, const Error& err, const SessionFacts& facts) {
  RecordM* rec = find(id);
  if (!rec || rec->state != RecordState::setup) {
    violation("model", "backend spawn completed for " + id + ", which is not in setup");
    return;
  }
  const bool caller_aborted = rec->caller >= 0 && callers[static_cast<std::size_t>(rec->caller)].reason;
  const Error caller_reason = caller_aborted ? callers[static_cast<std::size_t>(rec->caller)].reason : nullptr;

  if (!err) {
    rec->has_session = true;
    // "When the backend completes with a session, the service checks, in order: the caller
    // aborted ...; service disposing → SERVICE_DISPOSING; owner no longer live → OWNER_NOT_LIVE.
    // Any of these rolls the session back with close("PTY spawn rolled back")."
    std::optional<ErrorMatch> why;
    if (caller_aborted) why = ErrorMatch::exactly(caller_reason);
    else if (disposing) why = ErrorMatch::of(Code::SERVICE_DISPOSING);  // even after an owner
                                                                         // disposal's abort (F1)
    else if (!owners[static_cast<std::size_t>(rec->owner)].live) why = ErrorMatch::of(Code::OWNER_NOT_LIVE);
    if (why) {
      rec->rolling_back = true;
      rec->why = *why;
      begin_close(*rec, "PTY spawn rolled back");
      return;
    }
    rec->state = RecordState::published;
    rec->published = true;
    rec->publish_order = next_publish_++;
    Expect e;
    e.ok = true;
    e.spawn.session.id = rec->id;
    e.spawn.session.name = rec->name;
    e.spawn.session.type = rec->type;
    e.spawn.session.pid = facts.pid;
    e.spawn.session.status = facts.status;
    e.spawn.motd = facts.motd;
    due(rec->spawn_token, std::move(e));
    return;
  }

  // "When the spawn fails, the rejection is: the caller's exact abort reason if the caller
  // aborted; else the service's reason if the service aborted; else the backend's error."
  ErrorMatch rejection = caller_aborted          ? ErrorMatch::exactly(caller_reason)
                         : rec->service_aborted ? ErrorMatch::exactly(rec->backend_signal.reason())
                                                : ErrorMatch::exactly(err);
  due_error(rec->spawn_token, std::move(rejection));
  // "A cleanup failure (from a BackendCleanupError ...) is retained on the record
  // (cleanup_failed) ...; otherwise the record is dropped and the name released."
  if (is_backend_cleanup_error(err)) {
    rec->state = RecordState::cleanup_failed;
    rec->cleanup_error = err;
  } else {
    erase(*rec);
  }
  settle_disposals();
}

void Model::on_caller_abort(int caller, Error reason) {
  callers[static_cast<std::size_t>(caller)].reason = std::move(reason);
}

void Model::check_backend_signals() {
  // "calls the backend with a signal that fires on the caller's abort OR on the
  // service-owned signal (owner disposal, service disposal)".
  for (const auto& rec : records) {
    if (rec->state != RecordState::setup) continue;
    const Error caller = rec->caller >= 0 ? callers[static_cast<std::size_t>(rec->caller)].reason : nullptr;
    const bool want = caller || rec->service_aborted;
    if (rec->backend_signal.aborted() != want) {
      violation("backend-signal", rec->id + ": the backend's spawn signal is " +
                                      (want ? "not aborted" : "aborted") + " but the model says " +
                                      (want ? "aborted" : "not aborted"));
      continue;
    }
    if (!want) continue;
    const Error got = rec->backend_signal.reason();
    const bool caller_ok = caller && got == caller;
    const bool service_ok = rec->service_aborted && got && got->code == rec->service_code &&
                            got->message == default_message(rec->service_code);
    if (!caller_ok && !service_ok)
      violation("backend-signal", rec->id + ": the backend's spawn signal carries {" + describe(got) +
                                      "}, neither the caller's reason nor the service's");
  }
}

// ---------------------------------------------------------------- close

void Model::begin_close(RecordM& rec, const std::string& reason) {
  expected_closes.emplace(rec.id, reason);
  rec.state = RecordState::closing;
  rec.cleanup_error.reset();
}

void Model::on_close_called(const std::string& id, const std::string& reason) {
  RecordM* rec = find(id);
  auto it = expected_closes.find({id, reason});
  if (!rec || it == expected_closes.end()) {
    violation("unexpected-close", "backend close(\"" + reason + "\") of " + id + " was not expected");
    return;
  }
  expected_closes.erase(it);
  if (rec->close_in_flight) {
    violation("unexpected-close", "backend close of " + id + " called again while one is in flight");
    return;
  }
  rec->close_in_flight = true;
}

void Model::check_expected_calls() {
  for (const auto& [id, reason] : expected_closes)
    violation("missing-close", "the service never called close(\"" + reason + "\") on " + id);
  expected_closes.clear();
}

void Model::on_close_done(const std::string& id, const Status& status) {
  RecordM* rec = find(id);
  if (!rec || !rec->close_in_flight) {
    violation("model", "backend close of " + id + " completed, but none is in flight");
    return;
  }
  rec->close_in_flight = false;
  auto waiters = std::move(rec->close_waiters);
  rec->close_waiters.clear();
  if (status.ok()) {
    // "kill ... completes true when this call closed the session, false when it joined".
    for (auto [token, joined] : waiters) {
      Expect e;
      e.ok = true;
      e.flag = !joined;
      due(token, e);
    }
    if (rec->rolling_back) due_error(rec->spawn_token, rec->why);
    erase(*rec);  // closed: the id is dead
  } else {
    // "If the close fails, every joiner fails, the session stays listed" (cleanup_failed).
    rec->state = RecordState::cleanup_failed;
    rec->cleanup_error = status.error();
    for (auto [token, joined] : waiters) due_error(token, ErrorMatch::exactly(status.error()));
    if (rec->rolling_back) {
      rec->rolling_back = false;
      // "If the rollback close itself failed and the caller did not abort, the spawn rejects
      // with an aggregate ... holding both"; "a caller-triggered cancellation still receives
      // its exact reason".
      const Error caller = rec->caller >= 0 ? callers[static_cast<std::size_t>(rec->caller)].reason : nullptr;
      if (caller) {
        due_error(rec->spawn_token, ErrorMatch::exactly(caller));
      } else {
        ErrorMatch both = ErrorMatch::of(Code::CLEANUP_FAILED, "PTY spawn and rollback both failed");
        both.check_children = true;
        both.children = {rec->why, ErrorMatch::exactly(status.error())};
        due_error(rec->spawn_token, std::move(both));
      }
    }
  }
  settle_disposals();
}

std::optional<ErrorMatch> Model::fence(int owner, const std::string& id, RecordM** out) {
  // service.hpp: OWNER_NOT_LIVE, NO_SESSION, FOREIGN_SESSION, in that order.
  if (!owners[static_cast<std::size_t>(owner)].live) return ErrorMatch::of(Code::OWNER_NOT_LIVE);
  RecordM* rec = find(id);
  if (!rec || !rec->published) return ErrorMatch::of(Code::NO_SESSION);
  if (rec->owner != owner) return ErrorMatch::of(Code::FOREIGN_SESSION);
  *out = rec;
  return std::nullopt;
}

std::optional<ErrorMatch> Model::on_kill(int token, int owner, const std::string& id, const std::string& reason) {
  RecordM* rec = nullptr;
  if (auto error = fence(owner, id, &rec)) {
    completions[static_cast<std::size_t>(token)].phase = Phase::never;
    return error;
  }
  // "closing: a close is in flight. Every caller that asks to close joins it."
  const bool joined = rec->state == RecordState::closing;
  if (!joined) begin_close(*rec, reason);
  rec->close_waiters.emplace_back(token, joined);
  return std::nullopt;
}

// ---------------------------------------------------------------- sends, signals, reads

SyncExpect Model::on_start_send(int token, int owner, const std::string& id) {
  SyncExpect out;
  RecordM* rec = nullptr;
  if (auto error = fence(owner, id, &rec)) out.error = error;
  else if (rec->state == RecordState::closing || rec->state == RecordState::cleanup_failed)
    out.error = ErrorMatch::code_only(Code::SESSION_CLOSING);  // "Sending to a closing session fails"
  else if (rec->state == RecordState::sending)
    out.error = ErrorMatch::code_only(Code::SEND_ACTIVE);  // "at most one live send"
  else
    out.backend_call = true;
  if (out.error) completions[static_cast<std::size_t>(token)].phase = Phase::never;
  else pending_send_token_ = token;
  return out;
}

void Model::on_backend_start_send(const std::string& id, std::uint64_t serial, const Error& err) {
  RecordM* rec = find(id);
  if (!rec || pending_send_token_ < 0) {
    violation("unexpected-send", "backend start_send on " + id + " was not expected");
    return;
  }
  const int token = pending_send_token_;
  pending_send_token_ = -1;
  if (err) {
    completions[static_cast<std::size_t>(token)].phase = Phase::never;
    return;
  }
  rec->state = RecordState::sending;
  rec->live_send = static_cast<int>(sends.size());
  sends.push_back(SendM{id, token, serial, false, true});
}

void Model::on_backend_send_done(std::uint64_t serial, const Result<SendResult>& result) {
  for (std::size_t i = 0; i < sends.size(); ++i) {
    SendM& s = sends[i];
    if (s.serial != serial) continue;
    if (s.settled) return;  // the service settled it already (closed); it must ignore this
    RecordM* rec = find(s.record_id);
    s.settled = true;
    if (rec && rec->live_send == static_cast<int>(i)) {
      rec->live_send = -1;
      // "after the live one settles (success or failure) a new send is allowed".
      if (rec->state == RecordState::sending) rec->state = RecordState::published;
    }
    Expect e;
    e.ok = result.ok();
    if (result.ok()) e.send = result.value();
    else e.error = ErrorMatch::exactly(result.error());
    due(s.token, std::move(e));
    return;
  }
  violation("model", "backend send " + std::to_string(serial) + " completed, unknown to the model");
}

SyncExpect Model::on_signal(int token, int owner, const std::string& id) {
  SyncExpect out;
  RecordM* rec = nullptr;
  if (auto error = fence(owner, id, &rec)) out.error = error;
  else if (rec->state == RecordState::closing || rec->state == RecordState::cleanup_failed)
    out.error = ErrorMatch::code_only(Code::SESSION_CLOSING);
  else
    out.backend_call = true;
  if (out.error) completions[static_cast<std::size_t>(token)].phase = Phase::never;
  else pending_signal_token_ = token;
  return out;
}

void Model::on_backend_signal(const std::string& id, std::uint64_t serial, const Error& err) {
  if (!find(id) || pending_signal_token_ < 0) {
    violation("unexpected-signal", "backend signal on " + id + " was not expected");
    return;
  }
  const int token = pending_signal_token_;
  pending_signal_token_ = -1;
  if (err) {
    completions[static_cast<std::size_t>(token)].phase = Phase::never;
    return;
  }
  signals.push_back(SignalM{id, token, serial});
}

void Model::on_backend_signal_done(std::uint64_t serial, const Result<SignalResult>& result) {
  for (const SignalM& s : signals) {
    if (s.serial != serial) continue;
    Completion& c = completions[static_cast<std::size_t>(s.token)];
    if (c.phase != Phase::pending) return;  // already "any" (its session was closed)
    Expect e;
    e.ok = result.ok();
    if (result.ok()) e.signal = result.value();
    else e.error = ErrorMatch::exactly(result.error());
    due(s.token, std::move(e));
    return;
  }
  violation("model", "backend signal " + std::to_string(serial) + " completed, unknown to the model");
}

SyncExpect Model::on_read(int owner, const std::string& id) {
  SyncExpect out;
  RecordM* rec = nullptr;
  if (auto error = fence(owner, id, &rec)) out.error = error;
  else out.backend_call = true;
  return out;
}

SyncExpect Model::on_screen(int owner, const std::string& id) {
  // "A screen read: fenced like read" (contract.md, later additions).
  return on_read(owner, id);
}

SyncExpect Model::on_resize(int owner, const std::string& id, unsigned rows, unsigned cols) {
  SyncExpect out;
  RecordM* rec = nullptr;
  constexpr unsigned kMax = 4096;
  if (auto error = fence(owner, id, &rec)) out.error = error;
  else if (rec->state == RecordState::closing || rec->state == RecordState::cleanup_failed)
    out.error = ErrorMatch::code_only(Code::SESSION_CLOSING);  // "fenced like signal"
  else if (rows < 1 || rows > kMax || cols < 1 || cols > kMax)
    out.error = ErrorMatch::code_only(Code::INVALID_ARGUMENT);  // "INVALID_ARGUMENT outside 1..4096"
  else
    out.backend_call = true;
  if (out.backend_call) pending_resize_.emplace(rows, cols);
  return out;
}

void Model::on_backend_resize(const std::string& id, unsigned rows, unsigned cols, const Error& err) {
  RecordM* rec = find(id);
  if (!rec || !pending_resize_) {
    violation("unexpected-resize", "backend resize on " + id + " was not expected");
    return;
  }
  const auto [want_rows, want_cols] = *pending_resize_;
  pending_resize_.reset();
  if (rows != want_rows || cols != want_cols) {
    violation("resize-size", "backend resize on " + id + " got " + std::to_string(rows) + "x" +
                                 std::to_string(cols) + ", want " + std::to_string(want_rows) + "x" +
                                 std::to_string(want_cols));
    return;
  }
  if (err) return;
  rec->rows = rows;
  rec->cols = cols;
}

// ---------------------------------------------------------------- erase and disposal

void Model::erase(RecordM& rec) {
  const std::string id = rec.id;
  if (rec.live_send >= 0) {
    SendM& s = sends[static_cast<std::size_t>(rec.live_send)];
    if (!s.settled) {
      // Every completion exactly once: a send still live when its session is gone settles.
      s.settled = true;
      due_error(s.token, ErrorMatch::code_only(Code::SESSION_CLOSING));
    }
  }
  for (SendM& s : sends)
    if (s.record_id == id) s.attached = false;
  for (const SignalM& s : signals) {
    Completion& c = completions[static_cast<std::size_t>(s.token)];
    if (s.record_id == id && c.phase == Phase::pending) {
      // The session is about to be destroyed, after which its backend never completes the
      // signal: the service completes it once itself, as it does a send (finding F2).
      Expect e;
      e.error = ErrorMatch::code_only(Code::SESSION_CLOSING);
      c.phase = Phase::due;
      c.expect = e;
    }
  }
  records.erase(std::find_if(records.begin(), records.end(), [&](const auto& r) { return r.get() == &rec; }));
}

void Model::on_session_destroyed(const std::string& id) {
  if (find(id)) violation("destroyed-live", "the service destroyed the backend session of " + id +
                                                ", whose record is still in the table");
}

void Model::on_dispose_owner(int token, int owner) {
  OwnerM& o = owners[static_cast<std::size_t>(owner)];
  if (!o.minted_here) return due_error(token, ErrorMatch::of(Code::OWNER_NOT_LIVE));
  if (o.disposal >= 0) {  // "A second call while one is in flight joins it"
    disposals[static_cast<std::size_t>(o.disposal)].waiters.push_back(token);
    return;
  }
  if (!o.live) {
    // "a call for an owner already disposed succeeds (while a service disposal is in
    // flight: once it completed; it reports the failures)".
    if (service_disposal >= 0 && !disposals[static_cast<std::size_t>(service_disposal)].finished) {
      disposals[static_cast<std::size_t>(service_disposal)].quiet.push_back(token);
      return;
    }
    Expect e;
    e.ok = true;
    return due(token, e);
  }
  o.live = false;
  disposals.push_back(DisposalM{false, owner, {token}, {}, false});
  const int d = static_cast<int>(disposals.size()) - 1;
  o.disposal = d;
  tear_down(d, owner, Code::OWNER_NOT_LIVE, "PTY owner disposed");
  settle_disposals();
}

void Model::on_dispose(int token) {
  if (service_disposal >= 0) {
    DisposalM& d = disposals[static_cast<std::size_t>(service_disposal)];
    if (d.finished) {  // "or succeeds at once after it completed"
      Expect e;
      e.ok = true;
      return due(token, e);
    }
    d.waiters.push_back(token);  // "A second call joins the first"
    return;
  }
  disposing = true;
  // "It always clears backends, reservations and owner hooks".
  registered.clear();
  for (OwnerM& o : owners) o.live = false;
  disposals.push_back(DisposalM{true, -1, {token}, {}, false});
  service_disposal = static_cast<int>(disposals.size()) - 1;
  tear_down(service_disposal, -1, Code::SERVICE_DISPOSING, "PTY service disposed");
  settle_disposals();
}

void Model::tear_down(int disposal, int owner, Code code, const std::string& reason) {
  for (auto& rec : records) {
    if (rec->claimed_by >= 0 || (owner >= 0 && rec->owner != owner)) continue;
    rec->claimed_by = disposal;
    switch (rec->state) {
      case RecordState::setup:
        // "aborts its setups (reason OWNER_NOT_LIVE / SERVICE_DISPOSING)".
        rec->service_aborted = true;
        rec->service_code = code;
        break;
      case RecordState::published:
      case RecordState::sending:
        begin_close(*rec, reason);  // "closes its sessions with reason ..."
        break;
      case RecordState::cleanup_failed:
        // A published session whose close failed is still a session: closed again. A failed
        // setup or rollback has nothing the service may close; it is only reported.
        if (rec->published && rec->has_session) begin_close(*rec, reason);
        break;
      case RecordState::closing:  // joins the close in flight
      case RecordState::closed:
        break;
    }
  }
}

bool Model::settled(int disposal) const {
  for (const auto& rec : records)
    if (rec->claimed_by == disposal && rec->state != RecordState::cleanup_failed) return false;
  return true;
}

void Model::settle_disposals() {
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t d = 0; d < disposals.size(); ++d) {
      DisposalM& disp = disposals[d];
      if (disp.finished || disp.service) continue;
      if (settled(static_cast<int>(d))) {
        finish(static_cast<int>(d));
        progress = true;
      }
    }
    if (service_disposal >= 0 && !disposals[static_cast<std::size_t>(service_disposal)].finished) {
      // The service disposal waits for owner disposals in flight (they report their own).
      bool owners_done = std::all_of(disposals.begin(), disposals.end(),
                                     [](const DisposalM& x) { return x.service || x.finished; });
      if (owners_done && settled(service_disposal)) {
        finish(service_disposal);
        progress = true;
      }
    }
  }
}

void Model::finish(int disposal) {
  DisposalM& d = disposals[static_cast<std::size_t>(disposal)];
  d.finished = true;
  if (d.owner >= 0) owners[static_cast<std::size_t>(d.owner)].disposal = -1;
  // "completes with an aggregate "failed to clean up PTY lifecycle" when any rollback
  // ("failed to roll back unpublished PTY setup") or close ("failed to close N PTY
  // session(s)") failed, consuming those cleanup failures".
  std::vector<ErrorMatch> rollbacks, closes;
  std::vector<RecordM*> consumed;
  for (auto& rec : records) {
    if (rec->claimed_by != disposal) continue;
    (rec->published ? closes : rollbacks).push_back(ErrorMatch::exactly(rec->cleanup_error));
    consumed.push_back(rec.get());
  }
  for (RecordM* rec : consumed) erase(*rec);
  Expect e;
  e.ok = rollbacks.empty() && closes.empty();
  if (!e.ok) {
    e.error = ErrorMatch::of(Code::CLEANUP_FAILED, "failed to clean up PTY lifecycle");
    e.error.check_children = true;
    if (!rollbacks.empty()) {
      ErrorMatch group = ErrorMatch::of(Code::CLEANUP_FAILED, "failed to roll back unpublished PTY setup");
      group.check_children = true;
      group.children = std::move(rollbacks);
      e.error.children.push_back(std::move(group));
    }
    if (!closes.empty()) {
      ErrorMatch group = ErrorMatch::of(
          Code::CLEANUP_FAILED, "failed to close " + std::to_string(closes.size()) + " PTY session(s)");
      group.check_children = true;
      group.children = std::move(closes);
      e.error.children.push_back(std::move(group));
    }
  }
  for (int token : d.waiters) due(token, e);
  Expect quiet;
  quiet.ok = true;
  for (int token : d.quiet) due(token, quiet);
}

std::vector<std::string> Model::unsettled() const {
  std::vector<std::string> out;
  for (const Completion& c : completions)
    if (c.phase == Phase::pending || c.phase == Phase::due)
      out.push_back(c.label + (c.phase == Phase::pending ? " (undecided)" : " (due, never ran)"));
  return out;
}

}  // namespace dshpty::fuzz
