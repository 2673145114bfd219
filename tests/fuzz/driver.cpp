#include "driver.hpp"

#include <ev.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>

#include "dshpty/service.hpp"
#include "faults.hpp"
#include "model.hpp"
#include "spy.hpp"

namespace dshpty::fuzz {

namespace {

std::string show(const Error& e) { return e ? describe(e) : std::string("(none)"); }

std::string show(const SessionStatus& s) {
  if (s.running()) return "running";
  return "exited(" + (s.exit_code ? std::to_string(*s.exit_code) : std::string("-")) + "," +
         (s.signal ? std::to_string(*s.signal) : std::string("-")) + ")";
}

template <class T, class F>
std::string match_result(const Expect& e, const Result<T>& r, F&& same_value) {
  if (e.ok) {
    if (!r.ok()) return "failed with {" + show(r.error()) + "}, want success";
    return same_value(r.value());
  }
  if (r.ok()) return "succeeded, want " + describe(e.error);
  return mismatch(e.error, r.error());
}

std::string match(const Expect& e, const Result<void>& r) {
  if (e.ok) return r.ok() ? "" : "failed with {" + show(r.error()) + "}, want success";
  if (r.ok()) return "succeeded, want " + describe(e.error);
  return mismatch(e.error, r.error());
}

std::string match(const Expect& e, const Result<bool>& r) {
  return match_result(e, r, [&](bool v) {
    return v == e.flag ? "" : std::string("got ") + (v ? "true" : "false") + ", want " + (e.flag ? "true" : "false");
  });
}

std::string match(const Expect& e, const Result<SpawnResult>& r) {
  return match_result(e, r, [&](const SpawnResult& v) -> std::string {
    const SessionSnapshot& a = v.session;
    const SessionSnapshot& b = e.spawn.session;
    if (a.id != b.id || a.name != b.name || a.type != b.type || a.pid != b.pid || !(a.status == b.status) ||
        v.motd != e.spawn.motd)
      return "snapshot " + a.id + "/" + a.name.value_or("-") + "/" + a.type + "/pid " +
             (a.pid ? std::to_string(*a.pid) : "-") + "/" + show(a.status) + " differs from " + b.id + "/" +
             b.name.value_or("-") + "/" + b.type + "/pid " + (b.pid ? std::to_string(*b.pid) : "-") + "/" +
             show(b.status) + " (or the motd)";
    return "";
  });
}

std::string match(const Expect& e, const Result<SendResult>& r) {
  return match_result(e, r, [&](const SendResult& v) -> std::string {
    const SendResult& w = e.send;
    if (v.viewport != w.viewport || v.wait_reason != w.wait_reason || !(v.session_status == w.session_status) ||
        v.truncated != w.truncated || v.exit_code != w.exit_code || v.cwd != w.cwd ||
        v.input_hidden != w.input_hidden)
      return "send result \"" + v.viewport + "\" " + std::string(wait_reason_name(v.wait_reason)) +
             " differs from the backend's \"" + w.viewport + "\" " + std::string(wait_reason_name(w.wait_reason));
    return "";
  });
}

std::string match(const Expect& e, const Result<SignalResult>& r) {
  return match_result(e, r, [&](const SignalResult& v) -> std::string {
    if (v.signal != e.signal.signal || v.target_pgid != e.signal.target_pgid)
      return "signal result differs from the backend's";
    return "";
  });
}

const char* type_for(std::uint8_t slot, bool registering) {
  switch (slot % 3) {
    case 0: return "alpha";
    case 1: return "beta";
    default: return registering ? "" : "gamma";
  }
}

class Driver final : public SpyListener {
 public:
  Driver(const Trace& trace, const RunOptions& options) : trace_(trace), opt_(options) {
    // The select backend needs no fd of its own, so a run that must leak its loop (after a
    // violation, see ~Driver) leaks memory only.
    loop_ = ev_loop_new(static_cast<unsigned>(EVBACKEND_SELECT) | static_cast<unsigned>(EVFLAG_NOENV));
    service_ = std::make_unique<Service>(loop_);
    side_ = std::make_unique<Service>(loop_);
    for (auto& g : gates_) g = ScriptedGate::make();
    model_.add_owner(Owner{}, false);
    model_.add_owner(side_->mint_owner("foreign"), false);
  }

  ~Driver() override {
    if (failed_) {
      // The service may have work in flight, and destroying it then aborts the process (a
      // documented precondition): keep everything it may touch alive, on purpose.
      (void)service_.release();
      (void)side_.release();
      new std::vector<std::shared_ptr<ScriptedBackend>>(std::move(scripted_));
      new std::vector<std::shared_ptr<SpyBackend>>(std::move(spies_));
      new std::vector<std::shared_ptr<Send>>(std::move(sends_));
      return;
    }
    service_.reset();
    side_.reset();
    sends_.clear();
    spies_.clear();
    scripted_.clear();
    ev_loop_destroy(loop_);
  }

  Outcome run() {
    for (step_ = 0; step_ < trace_.size() && !failed_; ++step_) {
      exec(trace_[step_], false);
      after_step();
    }
    if (!failed_) epilogue();
    Outcome out;
    out.ok = !failed_;
    out.category = category_;
    out.message = message_;
    out.op_index = failed_step_;
    out.counts = std::move(counts_);
    return out;
  }

  // ------------------------------------------------------------ spy events
  void spawn_called(int instance, const SpawnSpec& spec) override {
    log("  backend " + std::to_string(instance) + " spawn " + spec.session_id);
    ids_.push_back(spec.session_id);
    model_.on_backend_spawn_called(instance, spec);
    if (const RecordM* rec = model_.find(spec.session_id)) id_owner_[spec.session_id] = rec->owner;
    sync_violations();
  }
  void before_spawn_done(const std::string& id, const Error& error, SpySession* session) override {
    log("  backend spawn " + id + (error ? " failed {" + show(error) + "}" : " ok"));
    count(!error ? "backend spawn: session" : is_backend_cleanup_error(error) ? "backend spawn: cleanup error" : "backend spawn: failed");
    SessionFacts facts;
    if (session) {
      sessions_[id] = session;
      facts = SessionFacts{session->motd(), session->pid(), session->status()};
    }
    model_.on_backend_spawned(id, error, facts);
    sync_violations();
  }
  void close_called(const std::string& id, const std::string& reason) override {
    log("  backend close " + id + " \"" + reason + "\"");
    count(("backend close: \"" + reason + "\"").c_str());
    model_.on_close_called(id, reason);
    sync_violations();
  }
  void before_close_done(const std::string& id, const Status& status) override {
    log("  backend close " + id + (status.ok() ? " ok" : " failed {" + show(status.error()) + "}"));
    count(status.ok() ? "backend close: ok" : "backend close: failed");
    if (const RecordM* rec = model_.find(id); rec && status.ok()) {
      const ScriptedSessionRecord* sim = scripted_[static_cast<std::size_t>(rec->instance)]->session(id);
      if (!sim || !sim->alive.empty())
        fail("processes", "the backend reported " + id + " closed with simulated processes alive");
    }
    model_.on_close_done(id, status);
    sync_violations();
  }
  void start_send_returned(const std::string& id, std::uint64_t serial, const Error& error) override {
    log("  backend start_send " + id + (error ? " rejected" : " accepted"));
    backend_sync_seen_ = true;
    backend_sync_error_ = error;
    model_.on_backend_start_send(id, serial, error);
    sync_violations();
  }
  void before_send_done(std::uint64_t serial, const Result<SendResult>& result) override {
    log("  backend send " + std::to_string(serial) + (result.ok() ? " done" : " failed"));
    model_.on_backend_send_done(serial, result);
    sync_violations();
  }
  void signal_returned(const std::string& id, std::uint64_t serial, const Error& error) override {
    log("  backend signal " + id + (error ? " rejected" : " accepted"));
    backend_sync_seen_ = true;
    backend_sync_error_ = error;
    model_.on_backend_signal(id, serial, error);
    sync_violations();
  }
  void before_signal_done(std::uint64_t serial, const Result<SignalResult>& result) override {
    log("  backend signal " + std::to_string(serial) + (result.ok() ? " done" : " failed"));
    model_.on_backend_signal_done(serial, result);
    sync_violations();
  }
  void read_returned(const std::string&, const Result<ReadPage>& result) override { last_read_ = result; }
  void screen_returned(const std::string&, const Result<ScreenSnapshot>& result) override { last_screen_ = result; }
  void resize_returned(const std::string& id, unsigned rows, unsigned cols, const Status& status) override {
    log("  backend resize " + id + " " + std::to_string(rows) + "x" + std::to_string(cols) +
        (status.ok() ? " ok" : " failed {" + show(status.error()) + "}"));
    backend_sync_seen_ = true;
    backend_sync_error_ = status.ok() ? nullptr : status.error();
    model_.on_backend_resize(id, rows, cols, backend_sync_error_);
    sync_violations();
  }
  void op_cancelled(std::uint64_t, bool result) override { last_cancel_ = result; }
  void op_read_output(std::uint64_t, const OutputDelta& delta) override { last_output_ = delta; }
  void session_destroyed(const std::string& id) override {
    log("  backend session " + id + " destroyed");
    sessions_.erase(id);
    model_.on_session_destroyed(id);
    sync_violations();
  }
  void backend_callback_returned() override {
    if (depth_ == 0) after_step();
  }

 private:
  struct InCall {
    explicit InCall(Driver& d) : d_(d) { ++d_.depth_; }
    ~InCall() { --d_.depth_; }
    Driver& d_;
  };

  // ------------------------------------------------------------ failures and logging
  void log(const std::string& line) {
    if (opt_.verbose) std::fprintf(stderr, "%s\n", line.c_str());
  }

  void count(const char* what) { ++counts_[what]; }

  void fail(const std::string& category, const std::string& message) {
    if (failed_) return;
    failed_ = true;
    category_ = category;
    message_ = message;
    failed_step_ = step_;
    log("VIOLATION [" + category + "] " + message);
    ev_break(loop_, EVBREAK_ALL);
  }

  void sync_violations() {
    if (model_.violations.empty()) return;
    const std::string& v = model_.violations.front();
    const auto close = v.find(']');
    fail(v.substr(1, close - 1), v.substr(close + 2));
    model_.violations.clear();
  }

  void after_step() {
    if (failed_) return;
    model_.check_expected_calls();
    model_.check_backend_signals();
    sync_violations();
    compare();
  }

  // ------------------------------------------------------------ the service against the model
  void compare() {
    if (failed_) return;
    std::vector<RecordView> rows = service_->records();
    if (rows.size() != model_.records.size()) {
      std::string want, got;
      for (const auto& r : model_.records) want += " " + r->id + ":" + std::string(record_state_name(r->state));
      for (const auto& r : rows) got += " " + r.id + ":" + std::string(record_state_name(r.state));
      return fail("table", "records() is [" + got + " ] but the model has [" + want + " ]");
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const RecordView& got = rows[i];
      const RecordM& want = *model_.records[i];
      const std::string head = "record " + want.id + ": ";
      if (got.id != want.id) return fail("table", head + "records() has " + got.id + " in its place");
      if (!(got.owner == model_.owners[static_cast<std::size_t>(want.owner)].handle))
        return fail("table", head + "wrong owner");
      if (got.name != want.name || got.type != want.type) return fail("table", head + "wrong name or type");
      if (got.state != want.state)
        return fail("state", head + "state " + std::string(record_state_name(got.state)) + ", want " +
                                 std::string(record_state_name(want.state)));
      if (got.published != want.published) return fail("table", head + "published flag differs");
      if (got.state == RecordState::cleanup_failed && got.cleanup_error != want.cleanup_error)
        return fail("table", head + "retains {" + show(got.cleanup_error) + "}, want {" +
                                 show(want.cleanup_error) + "}");
      if (got.state == RecordState::closing && !want.close_in_flight)
        return fail("closing-after-settle", head + "closing, but its backend has no close in flight");
    }
    for (std::size_t o = 0; o < model_.owners.size(); ++o) {
      const OwnerM& owner = model_.owners[o];
      const bool want = model_.has_activity(static_cast<int>(o));
      if (service_->has_owner_activity(owner.handle) != want)
        return fail("activity", "has_owner_activity(owner " + std::to_string(o) + ") is " + (want ? "false" : "true") +
                                    ", want " + (want ? "true" : "false"));
      if (service_->is_owner_live(owner.handle) != owner.live)
        return fail("owner-live", "is_owner_live(owner " + std::to_string(o) + ") differs from the model");
      if (!compare_list(static_cast<int>(o))) return;
    }
    if (service_->backend_types() != model_.backend_types()) return fail("registry", "backend_types() differs");
    if (service_->disposing() != model_.disposing) return fail("disposing", "disposing() differs");
    for (std::size_t i = 0; i < sends_.size(); ++i)
      if (sends_[i]->settled() != model_.sends[i].settled)
        return fail("send-settled", "send " + std::to_string(i) + " settled() differs from the model");
  }

  bool compare_list(int owner) {
    // "list(owner) returns fresh snapshots of that owner's published sessions only, in
    // publication order"; empty for an owner that is not live (service.hpp).
    std::vector<const RecordM*> want;
    if (model_.owners[static_cast<std::size_t>(owner)].live)
      for (const auto& r : model_.records)
        if (r->owner == owner && r->published) want.push_back(r.get());
    std::sort(want.begin(), want.end(), [](auto* a, auto* b) { return a->publish_order < b->publish_order; });
    std::vector<SessionSnapshot> got;
    {
      InCall call(*this);
      got = service_->list(model_.owners[static_cast<std::size_t>(owner)].handle);
    }
    if (got.size() != want.size()) {
      fail("list", "list(owner " + std::to_string(owner) + ") has " + std::to_string(got.size()) +
                       " sessions, want " + std::to_string(want.size()));
      return false;
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      const SpySession* spy = sessions_.count(want[i]->id) ? sessions_[want[i]->id] : nullptr;
      if (got[i].id != want[i]->id || got[i].name != want[i]->name || got[i].type != want[i]->type ||
          (spy && (got[i].pid != spy->pid() || !(got[i].status == spy->status())))) {
        fail("list", "list(owner " + std::to_string(owner) + ")[" + std::to_string(i) + "] is " + got[i].id +
                         ", want a fresh snapshot of " + want[i]->id);
        return false;
      }
    }
    return true;
  }

  // ------------------------------------------------------------ completions
  template <class T>
  Callback<T> completion(int token) {
    return [this, token](Result<T> result) { completed(token, result); };
  }

  template <class T>
  void completed(int token, const Result<T>& result) {
    if (failed_) return;
    Completion& c = model_.completions[static_cast<std::size_t>(token)];
    log("  completion " + c.label + (result.ok() ? " ok" : " failed {" + show(result.error()) + "}"));
    if (depth_ > 0) return fail("inside-call", c.label + " completed inside a service call");
    switch (c.phase) {
      case Phase::fired: return fail("twice", c.label + " completed a second time");
      case Phase::never: return fail("after-sync-failure", c.label + " completed although its call failed synchronously");
      case Phase::pending: return fail("early", c.label + " completed before the contract allows it");
      case Phase::due: break;
    }
    c.phase = Phase::fired;
    count(("completion " + std::string(completion_kind_name(c.kind)) + ": " +
           (result.ok() ? std::string("ok") : std::string(code_name(result.error()->code)))).c_str());
    if (std::string why = match(c.expect, result); !why.empty()) return fail("outcome", c.label + ": " + why);
    after_step();
    if (!armed_.empty() && !failed_) {
      Op op = armed_.front();
      armed_.pop_front();
      log("  (inside " + c.label + ") " + describe(op));
      count("op run inside a completion");
      exec(op, true);
      after_step();
    }
  }

  std::string label(const char* what) { return std::string(what) + "@op" + std::to_string(step_); }

  // ------------------------------------------------------------ references
  int owner_index(std::uint8_t a) const {
    if (a < 2 || model_.owners.size() <= 2) return a % 2;
    return 2 + (a - 2) % static_cast<int>(model_.owners.size() - 2);
  }
  const Owner& owner_of(int index) const { return model_.owners[static_cast<std::size_t>(index)].handle; }
  // Like owner_index, but 254 names the owner of session `id` (no owner if it has none).
  int session_owner_index(std::uint8_t a, const std::string& id) const {
    if (a != session_owner) return owner_index(a);
    auto it = id_owner_.find(id);
    return it == id_owner_.end() ? 0 : it->second;
  }
  std::string session_id(std::uint8_t b) const {
    if (b == unknown_session || ids_.empty()) return "pty-unknown";
    std::vector<const RecordM*> live;  // published ones first: the others mostly fence
    for (const auto& r : model_.records)
      if (r->published) live.push_back(r.get());
    if (live.empty())
      for (const auto& r : model_.records) live.push_back(r.get());
    if (b < 128 && !live.empty()) return live[live.size() - 1 - b % live.size()]->id;
    return ids_[ids_.size() - 1 - (b % 128u) % ids_.size()];
  }
  ScriptedBackend& backend_of(const std::string& id) {
    return *scripted_[static_cast<std::size_t>(model_.find(id)->instance)];
  }

  int new_instance(const std::string& type) {
    const int index = model_.add_instance(type);
    scripted_.push_back(std::make_shared<ScriptedBackend>(loop_, type));
    spies_.push_back(std::make_shared<SpyBackend>(scripted_.back(), index, this));
    return index;
  }

  // Scripts every close the model expects next (a disposal's), in a fixed order.
  void script_expected_closes(std::uint32_t f) {
    std::size_t i = 0;
    for (const auto& [id, reason] : model_.expected_closes)
      backend_of(id).session_script(id).closes.push(
          decode_step(disposal_close_bits(f, i++), StepUse::close, gates_));
  }

  // Checks a synchronous answer that may have come from the backend.
  void check_sync(const char* what, const SyncExpect& want, const Error& got) {
    count(("sync " + std::string(what) + ": " + (got ? std::string(code_name(got->code)) : std::string("ok"))).c_str());
    if (want.error) {
      if (backend_sync_seen_) return fail("fence", std::string(what) + " reached the backend, want " + describe(*want.error));
      if (std::string why = mismatch(*want.error, got); !why.empty()) return fail("sync", std::string(what) + ": " + why);
      return;
    }
    if (!backend_sync_seen_) return fail("missing-call", std::string(what) + " never reached the backend");
    if (backend_sync_error_) {
      if (got != backend_sync_error_)
        return fail("sync", std::string(what) + " returned {" + show(got) + "}, not the backend's {" +
                                show(backend_sync_error_) + "}");
    } else if (got) {
      return fail("sync", std::string(what) + " failed {" + show(got) + "} although the backend accepted it");
    }
  }

  // ------------------------------------------------------------ ops
  void exec(const Op& op, bool inside_completion) {
    if (op.nested && !inside_completion) {
      armed_.push_back(op);
      return;
    }
    log("op " + std::to_string(step_) + ": " + describe(op));
    switch (op.kind) {
      case OpKind::register_backend: return do_register(op);
      case OpKind::unregister_backend: return do_unregister(op);
      case OpKind::mint_owner: {
        Owner owner;
        {
          InCall call(*this);
          owner = service_->mint_owner("owner" + std::to_string(model_.owners.size()));
        }
        model_.add_owner(owner, true);
        return;
      }
      case OpKind::dispose_owner: {
        const int owner = owner_index(op.a);
        const int token = model_.new_token(CompletionKind::dispose_owner, label("dispose_owner"));
        model_.on_dispose_owner(token, owner);
        script_expected_closes(op.f);
        InCall call(*this);
        service_->dispose_owner(owner_of(owner), completion<void>(token));
        return;
      }
      case OpKind::spawn: return do_spawn(op);
      case OpKind::abort_spawn: {
        if (model_.callers.empty()) return;
        const int k = op.a % static_cast<int>(model_.callers.size());
        if (model_.callers[static_cast<std::size_t>(k)].reason) return;
        Error reason = make_error(Code::ABORTED, "caller abort " + std::to_string(k));
        model_.on_caller_abort(k, reason);
        InCall call(*this);
        model_.callers[static_cast<std::size_t>(k)].controller.abort(reason);
        return;
      }
      case OpKind::start_send: return do_start_send(op);
      case OpKind::cancel: return do_cancel(op);
      case OpKind::read_output: return do_read_output(op);
      case OpKind::read: return do_read(op);
      case OpKind::signal: return do_signal(op);
      case OpKind::kill: return do_kill(op);
      case OpKind::list:
        compare_list(owner_index(op.a));
        return;
      case OpKind::release_gate: {
        const std::size_t slot = op.a % gate_slots;
        std::shared_ptr<ScriptedGate> gate = std::move(gates_[slot]);
        gates_[slot] = ScriptedGate::make();
        InCall call(*this);  // a gate only posts: nothing may complete inside
        if (op.b & 1) gate->fail(make_error(Code::BACKEND_FAILED, "gate " + std::to_string(slot) + " failed"));
        else gate->open();
        return;
      }
      case OpKind::turn:
        if (inside_completion) return;  // never re-enter the loop from a callback
        for (int i = 0; i < 1 + op.b % 4 && !failed_; ++i) {
          turn(op.a & 1);
          after_step();
        }
        return;
      case OpKind::resize: return do_resize(op);
      case OpKind::screen: return do_screen(op);
      case OpKind::dispose: {
        const int token = model_.new_token(CompletionKind::dispose, label("dispose"));
        model_.on_dispose(token);
        script_expected_closes(op.f);
        InCall call(*this);
        service_->dispose(completion<void>(token));
        return;
      }
    }
  }

  void turn(bool once) {
    if (!once) {
      ev_run(loop_, EVRUN_NOWAIT);
      return;
    }
    // EVRUN_ONCE blocks until something happens: make sure something does.
    ev_timer guard;
    ev_timer_init(&guard, [](struct ev_loop*, ev_timer*, int) {}, 0., 0.);
    ev_timer_start(loop_, &guard);
    ev_run(loop_, EVRUN_ONCE);
    ev_timer_stop(loop_, &guard);
  }

  void do_register(const Op& op) {
    const std::string type = type_for(op.a, true);
    std::vector<int> same;
    for (std::size_t i = 0; i < model_.instance_types.size(); ++i)
      if (model_.instance_types[i] == type) same.push_back(static_cast<int>(i));
    const int inst = (op.b == 0 || same.empty()) ? new_instance(type) : same[(op.b - 1u) % same.size()];
    const std::optional<Code> want = model_.on_register(inst);
    Result<BackendRegistration> got = [&] {
      InCall call(*this);
      return service_->register_backend(spies_[static_cast<std::size_t>(inst)]);
    }();
    if (want) {
      if (got.ok()) return fail("registry", "register_backend succeeded, want " + std::string(code_name(*want)));
      if (got.error()->code != *want)
        return fail("registry", "register_backend failed {" + show(got.error()) + "}, want " + std::string(code_name(*want)));
      return;
    }
    if (!got.ok()) return fail("registry", "register_backend failed {" + show(got.error()) + "}, want success");
    regs_.push_back(got.value());
  }

  void do_unregister(const Op& op) {
    if (regs_.empty()) return;
    const std::size_t k = op.a % regs_.size();
    const bool want = model_.on_unregister(static_cast<int>(k));
    bool got;
    {
      InCall call(*this);
      got = regs_[k].unregister();
    }
    if (got != want) fail("registry", "unregister() of registration " + std::to_string(k) + " returned " +
                                          (got ? "true" : "false"));
  }

  void do_spawn(const Op& op) {
    const int owner = owner_index(op.a);
    const std::string type = type_for(op.b, false);
    std::optional<std::string> name;
    if (const int n = op.c % 8; n == 3) name = "";
    else if (n > 3) name = "n" + std::to_string(n - 4);
    int caller = -1;
    if (const int s = op.d % 4; s >= 2) {
      caller = model_.add_caller();
      if (s == 3) {
        Error reason = make_error(Code::ABORTED, "caller abort " + std::to_string(caller));
        model_.on_caller_abort(caller, reason);
        model_.callers[static_cast<std::size_t>(caller)].controller.abort(reason);
      }
    }
    const int token = model_.new_token(CompletionKind::spawn, label("spawn"));
    if (model_.on_spawn(token, owner, type, name, caller))
      scripted_[static_cast<std::size_t>(model_.instance_of(type))]->spawns().push(decode_spawn(op.f, gates_));
    SpawnOptions options;
    options.type = type;
    options.name = name;
    if (caller >= 0) options.signal = model_.callers[static_cast<std::size_t>(caller)].controller.signal();
    {
      InCall call(*this);
      service_->spawn(owner_of(owner), std::move(options), completion<SpawnResult>(token));
    }
    if (model_.spawn_call_outstanding()) fail("missing-call", "spawn passed every check but never reached the backend");
  }

  void do_start_send(const Op& op) {
    const std::string id = session_id(op.b);
    const int owner = session_owner_index(op.a, id);
    const int token = model_.new_token(CompletionKind::send, label("send"));
    const SyncExpect want = model_.on_start_send(token, owner, id);
    if (want.backend_call)
      backend_of(id).session_script(id).sends.push(decode_send(op.f, gates_, static_cast<int>(model_.sends.size())));
    backend_sync_seen_ = false;
    backend_sync_error_.reset();
    Result<std::shared_ptr<Send>> got = [&] {
      InCall call(*this);
      SendRequest request;
      request.text = "echo " + std::to_string(token);
      return service_->start_send(owner_of(owner), id, std::move(request), completion<SendResult>(token));
    }();
    check_sync("start_send", want, got.ok() ? nullptr : got.error());
    if (!failed_ && got.ok()) sends_.push_back(got.value());
    if (!failed_ && sends_.size() != model_.sends.size()) fail("model", "send handles and model sends disagree");
  }

  void do_cancel(const Op& op) {
    if (sends_.empty()) return;
    const std::size_t i = op.a % sends_.size();
    const SendM& m = model_.sends[i];
    const bool reachable = !m.settled && m.attached;
    last_cancel_.reset();
    bool got;
    {
      InCall call(*this);
      got = sends_[i]->cancel();
    }
    // "cancel() ... returns false once the operation has settled".
    if (!reachable) {
      if (got || last_cancel_) fail("cancel", "cancel() of settled send " + std::to_string(i) + " returned " +
                                                  (got ? "true" : "false") + (last_cancel_ ? " and reached the backend" : ""));
      return;
    }
    if (!last_cancel_ || got != *last_cancel_) fail("cancel", "cancel() of live send " + std::to_string(i) + " did not give the backend's answer");
  }

  void do_read_output(const Op& op) {
    if (sends_.empty()) return;
    const std::size_t i = op.a % sends_.size();
    const bool attached = model_.sends[i].attached;
    last_output_.reset();
    OutputDelta got;
    {
      InCall call(*this);
      got = sends_[i]->read_output();
    }
    // "Output since the previous call (consuming). Empty once the session is gone."
    if (!attached) {
      if (!got.text.empty() || got.truncated || last_output_)
        fail("read_output", "read_output() of send " + std::to_string(i) + " after its session closed was not empty");
      return;
    }
    if (!last_output_ || got.text != last_output_->text || got.truncated != last_output_->truncated)
      fail("read_output", "read_output() of send " + std::to_string(i) + " is not the backend's delta");
  }

  void do_read(const Op& op) {
    const std::string id = session_id(op.b);
    const int owner = session_owner_index(op.a, id);
    const SyncExpect want = model_.on_read(owner, id);
    ReadRequest request;
    if (op.c & 1) request.offset = -1;
    last_read_.reset();
    Result<ReadPage> got = [&] {
      InCall call(*this);
      return service_->read(owner_of(owner), id, request);
    }();
    if (want.error) {
      if (last_read_) return fail("fence", "read reached the backend, want " + describe(*want.error));
      if (got.ok()) return fail("sync", "read succeeded, want " + describe(*want.error));
      if (std::string why = mismatch(*want.error, got.error()); !why.empty()) return fail("sync", "read: " + why);
      return;
    }
    if (!last_read_) return fail("missing-call", "read never reached the backend");
    if (!last_read_->ok()) {
      if (got.ok() || got.error() != last_read_->error()) fail("sync", "read did not return the backend's error");
      return;
    }
    if (!got.ok() || got.value().text != last_read_->value().text ||
        got.value().total_lines != last_read_->value().total_lines)
      fail("sync", "read did not return the backend's page");
  }

  void do_signal(const Op& op) {
    const std::string id = session_id(op.b);
    const int owner = session_owner_index(op.a, id);
    const int token = model_.new_token(CompletionKind::signal, label("signal"));
    const SyncExpect want = model_.on_signal(token, owner, id);
    if (want.backend_call) backend_of(id).session_script(id).signals.push(decode_signal(op.f, gates_));
    backend_sync_seen_ = false;
    backend_sync_error_.reset();
    Status got = [&] {
      InCall call(*this);
      return service_->signal(owner_of(owner), id, static_cast<Signal>(op.c % 5), completion<SignalResult>(token));
    }();
    check_sync("signal", want, got.ok() ? nullptr : got.error());
  }

  void do_screen(const Op& op) {
    const std::string id = session_id(op.b);
    const int owner = session_owner_index(op.a, id);
    const SyncExpect want = model_.on_screen(owner, id);
    if (want.backend_call)
      if (auto answer = decode_screen(op.f)) backend_of(id).session_script(id).screens.push_back(*answer);
    last_screen_.reset();
    Result<ScreenSnapshot> got = [&] {
      InCall call(*this);
      return service_->screen(owner_of(owner), id);
    }();
    count(("sync screen: " + (got.ok() ? std::string("ok") : std::string(code_name(got.error()->code)))).c_str());
    if (want.error) {
      if (last_screen_) return fail("fence", "screen reached the backend, want " + describe(*want.error));
      if (got.ok()) return fail("sync", "screen succeeded, want " + describe(*want.error));
      if (std::string why = mismatch(*want.error, got.error()); !why.empty()) return fail("sync", "screen: " + why);
      return;
    }
    if (!last_screen_) return fail("missing-call", "screen never reached the backend");
    if (!last_screen_->ok()) {
      if (got.ok() || got.error() != last_screen_->error()) fail("sync", "screen did not return the backend's error");
      return;
    }
    if (!got.ok() || !(got.value() == last_screen_->value()))
      return fail("sync", "screen did not return the backend's snapshot");
    // Every resize the service let through, and only those, reached the backend's screen.
    const RecordM* rec = model_.find(id);
    if (got.value().rows != rec->rows || got.value().cols != rec->cols)
      fail("screen-size", "screen of " + id + " is " + std::to_string(got.value().rows) + "x" +
                              std::to_string(got.value().cols) + ", want " + std::to_string(rec->rows) + "x" +
                              std::to_string(rec->cols));
  }

  void do_resize(const Op& op) {
    const std::string id = session_id(op.b);
    const int owner = session_owner_index(op.a, id);
    const unsigned rows = resize_dimension(op.c), cols = resize_dimension(op.d);
    const SyncExpect want = model_.on_resize(owner, id, rows, cols);
    if (want.backend_call)
      if (auto answer = decode_resize(op.f)) backend_of(id).session_script(id).resizes.push(*answer);
    backend_sync_seen_ = false;
    backend_sync_error_.reset();
    Status got = [&] {
      InCall call(*this);
      return service_->resize(owner_of(owner), id, rows, cols);
    }();
    check_sync("resize", want, got.ok() ? nullptr : got.error());
  }

  void do_kill(const Op& op) {
    const std::string id = session_id(op.b);
    const int owner = session_owner_index(op.a, id);
    const std::string reason = (op.c & 1) ? "fuzz reason" : "model request";
    const int token = model_.new_token(CompletionKind::kill, label("kill"));
    const std::optional<ErrorMatch> want = model_.on_kill(token, owner, id, reason);
    if (model_.expected_closes.count({id, reason}))
      backend_of(id).session_script(id).closes.push(
          decode_step(static_cast<std::uint8_t>(op.f), StepUse::close, gates_));
    Status got = [&] {
      InCall call(*this);
      if (op.c & 1) return service_->kill(owner_of(owner), id, completion<bool>(token), reason);
      return service_->kill(owner_of(owner), id, completion<bool>(token));  // the default reason
    }();
    count(got.ok() ? "sync kill: ok" : ("sync kill: " + std::string(code_name(got.error()->code))).c_str());
    if (want) {
      if (got.ok()) return fail("sync", "kill succeeded, want " + describe(*want));
      if (std::string why = mismatch(*want, got.error()); !why.empty()) fail("sync", "kill: " + why);
    } else if (!got.ok()) {
      fail("sync", "kill failed {" + show(got.error()) + "}, want it accepted");
    }
  }

  // ------------------------------------------------------------ the end of every run
  bool quiet() const {
    if (!model_.unsettled().empty() || !sessions_.empty()) return false;
    for (const auto& b : scripted_)
      if (b->pending() != 0) return false;
    return true;
  }

  void drain() {
    for (int round = 0; round < 4000 && !failed_; ++round) {
      if (quiet()) return;
      ev_run(loop_, EVRUN_NOWAIT);
      after_step();
      if (round % 4 == 3) {
        // Whatever still waits on a gate is released, so every step finishes.
        for (auto& g : gates_) {
          std::shared_ptr<ScriptedGate> gate = std::move(g);
          g = ScriptedGate::make();
          gate->open();
        }
      }
    }
    if (failed_ || quiet()) return;
    std::string what;
    for (const std::string& s : model_.unsettled()) what += " " + s + ";";
    if (!sessions_.empty()) what += " " + std::to_string(sessions_.size()) + " backend session(s) never destroyed;";
    fail("stuck", "the service did not settle:" + what);
  }

  void epilogue() {
    armed_.clear();
    step_ = trace_.size();
    log("epilogue: dispose and drain");
    {
      const int token = model_.new_token(CompletionKind::dispose, "dispose@end");
      model_.on_dispose(token);
      // Fixed faults: independent of the trace's length, so the shrinker's cuts keep them.
      script_expected_closes(0x9e3779b9u);
      InCall call(*this);
      service_->dispose(completion<void>(token));
    }
    after_step();
    drain();
    if (failed_) return;
    // "Afterwards every spawn fails with SERVICE_DISPOSING."
    {
      const int token = model_.new_token(CompletionKind::spawn, "spawn@end");
      const int owner = model_.add_owner(service_->mint_owner("late"), true);
      model_.on_spawn(token, owner, "alpha", std::nullopt, -1);
      SpawnOptions options;
      options.type = "alpha";
      InCall call(*this);
      service_->spawn(owner_of(owner), std::move(options), completion<SpawnResult>(token));
    }
    drain();
    if (failed_) return;
    // After dispose everything is empty and every simulated process is gone.
    if (!service_->records().empty()) return fail("not-empty", "records() is not empty after dispose");
    for (std::size_t o = 0; o < model_.owners.size(); ++o)
      if (service_->has_owner_activity(model_.owners[o].handle))
        return fail("activity", "owner " + std::to_string(o) + " has activity after dispose");
    if (!service_->backend_types().empty()) return fail("not-empty", "backends are still registered after dispose");
    for (std::size_t i = 0; i < scripted_.size(); ++i) {
      if (!scripted_[i]->all_processes_gone())
        return fail("processes", "backend " + std::to_string(i) + " still has simulated processes alive");
      if (scripted_[i]->live_sessions() != 0)
        return fail("not-empty", "backend " + std::to_string(i) + " still has live sessions");
    }
  }

  const Trace& trace_;
  const RunOptions& opt_;
  struct ev_loop* loop_ = nullptr;
  std::unique_ptr<Service> service_;
  std::unique_ptr<Service> side_;  // mints the foreign owner
  Model model_;
  std::vector<std::shared_ptr<ScriptedBackend>> scripted_;  // by instance
  std::vector<std::shared_ptr<SpyBackend>> spies_;
  std::vector<BackendRegistration> regs_;
  std::vector<std::string> ids_;                 // every id a backend was asked to spawn
  std::map<std::string, int> id_owner_;          // and its owner
  std::map<std::string, SpySession*> sessions_;  // backend sessions not yet destroyed
  std::vector<std::shared_ptr<Send>> sends_;     // aligned with model_.sends
  GateSlots gates_;
  std::deque<Op> armed_;
  int depth_ = 0;
  std::size_t step_ = 0;

  bool backend_sync_seen_ = false;
  Error backend_sync_error_;
  std::optional<Result<ReadPage>> last_read_;
  std::optional<Result<ScreenSnapshot>> last_screen_;
  std::optional<bool> last_cancel_;
  std::optional<OutputDelta> last_output_;

  std::map<std::string, long> counts_;
  bool failed_ = false;
  std::string category_, message_;
  std::size_t failed_step_ = 0;
};

}  // namespace

Outcome run_trace(const Trace& trace, const RunOptions& options) {
  Driver driver(trace, options);
  return driver.run();
}

}  // namespace dshpty::fuzz
