#include "engine.hpp"

#include <utility>

#include "engine_counted.hpp"
#include "session_lookup.hpp"
#include "render/escape.hpp"

namespace dshpty::engine {

namespace {

// A wait bound outside 1..kMaxWaitMs names the field as every face spells it in its docs.
Status check_wait_bound(const std::optional<std::chrono::milliseconds>& value, const char* what) {
  if (!value || (value->count() >= 1 && value->count() <= kMaxWaitMs)) return {};
  return make_error(Code::INVALID_ARGUMENT, std::string(what) + " must be an integer from 1 to " +
                                                std::to_string(kMaxWaitMs) + " ms, got " +
                                                std::to_string(value->count()));
}

}  // namespace

Status check_wait_bounds(const SendRequest& request) {
  if (auto timeout = check_wait_bound(request.timeout, "timeout (timeoutMs, timeout_ms)"); !timeout) return timeout;
  return check_wait_bound(request.idle, "idle (idleMs, idle_ms)");
}

Status check_open(const OpenRequest& request, const Settings::Policy& policy) {
  if (request.name && render::has_control(*request.name))
    return make_error(Code::INVALID_ARGUMENT,
                      "a session name must not hold control characters: \"" + *request.name + "\"");
  if (request.options.count("network") && !request.options.count("sandbox") && policy.sandbox_default == "none")
    return make_error(Code::INVALID_ARGUMENT, "network is an option of a sandbox: give sandbox too, or leave network out");
  return {};
}

Engine::Engine(Service& service, Settings settings)
    : service_(service), settings_(std::move(settings)), late_(service.loop()), owners_(service) {}

bool Engine::dispose_owner(std::string_view label, Callback<void> done) {
  auto owner = owners_.take(label);
  if (!owner) return false;
  service_.dispose_owner(*owner, owed(std::move(done)));
  return true;
}

bool Engine::has_activity(std::string_view owner) { return service_.has_owner_activity(owners_.get(owner)); }

std::vector<SessionSnapshot> Engine::list(std::string_view owner) {
  return service_.list(owners_.get(owner), Service::ListDetail::basic);
}

std::vector<SessionSnapshot> Engine::list_activity(std::string_view owner) { return service_.list(owners_.get(owner)); }

std::optional<LimitHit> Engine::limit_hit(std::string_view owner, std::string_view session_id) {
  auto one = service_.snapshot(owners_.get(owner), session_id);
  return one ? one->limit_hit : std::nullopt;
}

std::optional<std::string> Engine::resolve(std::string_view owner, std::string_view word) {
  // An id is looked up alone; only a name needs the owner's whole list.
  if (service_.snapshot(owners_.get(owner), word)) return std::string(word);
  return resolve_session(word, list(owner));
}

std::optional<std::string> Engine::live_send_on(std::string_view owner, std::string_view word) {
  const auto session = resolve(owner, word);
  if (!session) return std::nullopt;
  for (const auto& [key, entry] : sends_.live(owner)) {
    if (resolve(owner, entry.session_id) == session) return key;
  }
  return std::nullopt;
}

void Engine::open(std::string_view owner, OpenRequest request, Callback<SpawnResult> done, std::string abort_key) {
  if (auto valid = check_open(request, settings_.policy); !valid) {
    // Every outcome comes through `done`, from the loop.
    late_.post([done = owed(std::move(done)), error = valid.error()] { done(error); });
    return;
  }
  SpawnOptions options;
  options.type = std::move(request.type);
  options.name = std::move(request.name);
  options.cwd = std::move(request.cwd);
  options.options = std::move(request.options);
  options.limits = request.limits;
  // A key already pending stays with its first open; this one is then not abortable.
  bool abortable = false;
  if (!abort_key.empty()) {
    auto [it, inserted] = opens_.try_emplace(abort_key);
    if (inserted) options.signal = it->second.signal();
    abortable = inserted;
  }
  service_.spawn(owners_.get(owner), std::move(options),
                 owed<SpawnResult>([this, abortable, key = std::move(abort_key),
                                    done = std::move(done)](Result<SpawnResult> result) {
                   if (abortable) opens_.erase(key);
                   done(std::move(result));
                 }));
}

bool Engine::abort_open(std::string_view abort_key, Error reason) {
  const auto it = opens_.find(abort_key);
  return it != opens_.end() && it->second.abort(std::move(reason));
}

Status Engine::send(std::string_view owner, SessionSend request, std::string send_key, Callback<SendResult> done) {
  if (sends_.is_live(owner, send_key) || waiting_.find(owner, send_key))
    return make_error(Code::INVALID_ARGUMENT, "a live send already uses request id " + send_key);
  if (auto bounded = check_wait_bounds(request.request); !bounded) return bounded;
  if (waiting_.must_wait(request.session_id, owner)) {
    ++pending_;  // owed: its every outcome now comes through `done`
    waiting_.push({.owner = std::string(owner), .key = std::move(send_key), .request = std::move(request),
                   .done = std::move(done)});
    return {};
  }
  return start_send(owner, std::move(request), std::move(send_key), std::move(done));
}

Status Engine::start_send(std::string_view owner, SessionSend request, std::string send_key, Callback<SendResult> done) {
  if (!request.request.idle) request.request.idle = settings_.send_idle;
  // A background send (a job) has no deadline unless it asked for one.
  if (!request.request.timeout && !request.request.background) request.request.timeout = settings_.send_timeout;
  // The backend cuts the viewport to the face's cap: one cut, head and tail kept.
  if (!request.request.max_bytes) request.request.max_bytes = settings_.max_result_bytes;
  std::string session_id = request.session_id;
  const bool job = request.request.background;
  auto send = service_.start_send(
      owners_.get(owner), request.session_id, std::move(request.request),
      counted<SendResult>([this, owner = std::string(owner), send_key, session_id,
                           done = std::move(done)](Result<SendResult> result) {
        sends_.settle(owner, send_key);
        // The sends that waited for this cancelled one go now, from a fresh loop turn (not
        // inside this completion), in the order they came.
        if (waiting_.settled(session_id, owner, send_key))
          late_.post([this, session_id] {
            for (auto& queued : waiting_.release(session_id)) start_waiting(std::move(queued));
          });
        done(std::move(result));
        // After the face had the result: a reader waiting on this send may now say done.
        answer_output_waits(owner, send_key);
      }));
  if (!send) return send.error();
  ++pending_;
  sends_.add_live(std::move(send_key), std::string(owner), std::move(send.value()), std::move(session_id), job);
  return {};
}

void Engine::start_waiting(SendQueue::Queued queued) {
  Callback<SendResult> done = queued.done;
  Status status = start_send(queued.owner, std::move(queued.request), std::move(queued.key), std::move(queued.done));
  if (!status) done(status.error());
  --pending_;  // the hold it kept while it waited
  settle_if_quiet();
}

Result<Engine::FoundSend> Engine::find_send(std::string_view owner, std::string_view send_key) const {
  // The caller's own send first: another owner's send under the same key is no obstacle.
  if (const auto* queued = waiting_.find(owner, send_key)) return FoundSend{.queued = queued, .entry = nullptr};
  if (const auto* entry = sends_.find(owner, send_key)) return FoundSend{.queued = nullptr, .entry = entry};
  // Every operation is fenced to its exact owner: a guessed id reaches no other owner's send.
  if (waiting_.others_have(owner, send_key) || sends_.others_have(owner, send_key))
    return make_error(Code::FOREIGN_SESSION, "send " + std::string(send_key) + " belongs to another owner");
  return make_error(Code::INVALID_ARGUMENT, "no send with id " + std::string(send_key));
}

Result<bool> Engine::cancel_send(std::string_view owner, std::string_view send_key) {
  auto found = find_send(owner, send_key);
  if (!found) return found.error();
  if (found->queued) {
    auto dropped = std::make_shared<SendQueue::Queued>(*waiting_.take(owner, send_key));
    late_.post([this, dropped] {
      dropped->done(make_error(Code::ABORTED, "the send was cancelled before it started"));
      --pending_;
      settle_if_quiet();
    });
    return true;
  }
  const SendTable::Entry& entry = *found->entry;
  const bool interrupted = entry.send->cancel();
  // Until it settles, this owner's next sends to the session wait for it (SendQueue), also
  // when nothing could be done to it: the caller gave it up either way.
  if (sends_.is_live(owner, send_key)) waiting_.wind_down(entry.session_id, std::string(owner), std::string(send_key));
  return interrupted;
}

Result<OutputDelta> Engine::send_output(std::string_view owner, std::string_view send_key) {
  auto found = find_send(owner, send_key);
  if (!found) return found.error();
  if (found->queued) return OutputDelta{};  // it has not started: no output yet
  return found->entry->send->read_output();
}

Result<ReadPage> Engine::read(std::string_view owner, const SessionRead& request) {
  return service_.read(owners_.get(owner), request.session_id, request.request);
}

Result<ScreenSnapshot> Engine::screen(std::string_view owner, const SessionScreen& request) {
  return service_.screen(owners_.get(owner), request.session_id);
}

Status Engine::resize(std::string_view owner, const SessionResize& request) {
  return service_.resize(owners_.get(owner), request.session_id, request.rows, request.cols);
}

Status Engine::signal(std::string_view owner, const SessionSignal& request, Callback<SignalResult> done) {
  auto status = service_.signal(owners_.get(owner), request.session_id, request.signal, counted(std::move(done)));
  if (status) ++pending_;
  return status;
}

Status Engine::close(std::string_view owner, const SessionClose& request, Callback<bool> done) {
  auto status = service_.kill(owners_.get(owner), request.session_id, counted(std::move(done)));
  if (status) ++pending_;
  return status;
}

Result<std::vector<LingeringSession>> Engine::lingering(std::string_view owner) {
  auto listing = list_lingering(settings_.state_dir, owner);
  if (!listing) return listing.error();
  std::vector<LingeringSession> out;
  for (auto& s : listing->sessions) {
    if (!s.attached) out.push_back(std::move(s));
  }
  return out;
}

Error lingering_no_session(std::string_view name, std::string_view attach) {
  return make_error(Code::NO_SESSION, "no session \"" + std::string(name) +
                                          "\" here, but a lingering session of that name outlived its host: "
                                          "take it over with " + std::string(attach));
}

Error send_active(std::string_view remedy) {
  return make_error(Code::SEND_ACTIVE, "a send is already live on this PTY session: " + std::string(remedy));
}

std::optional<std::string> Engine::lingering_named(std::string_view owner, std::string_view word) {
  if (word.empty() || resolve(owner, word)) return std::nullopt;
  auto sessions = lingering(owner);
  if (!sessions) return std::nullopt;
  for (const auto& s : *sessions)
    if (s.name && *s.name == word) return *s.name;
  return std::nullopt;
}

void Engine::attach(std::string_view owner, std::optional<std::string> name, Callback<std::vector<AttachOutcome>> done) {
  auto finish = owed<std::vector<AttachOutcome>>(std::move(done));
  auto fail = [&](Error error) {
    late_.post([finish, error = std::move(error)] { finish(error); });
  };
  if (shutting_down()) return fail(make_error(Code::SERVICE_DISPOSING));
  auto listing = list_lingering(settings_.state_dir, owner);
  if (!listing) return fail(listing.error());
  struct Gather {
    std::vector<AttachOutcome> outcomes;
    std::size_t left = 0;
    bool named = false;
    Callback<std::vector<AttachOutcome>> done;
  };
  auto gather = std::make_shared<Gather>();
  gather->named = name.has_value();
  gather->done = std::move(finish);
  std::vector<LingeringSession> targets;
  for (auto& s : listing->sessions) {
    // Unnamed, an attach takes what no host holds; named, it takes that one from
    // whichever host holds it.
    if (name ? s.name == name : !s.attached) targets.push_back(std::move(s));
  }
  for (auto& t : listing->tombstones) {
    if (name && t.name != name) continue;
    forget_linger_tombstone(settings_.state_dir, t.key);
    AttachOutcome o;
    o.name = t.name;
    o.tombstone = std::move(t);
    gather->outcomes.push_back(std::move(o));
  }
  if (name && targets.empty() && gather->outcomes.empty()) {
    return late_.post([gather, name = *name] {
      gather->done(make_error(Code::NO_SESSION, "no lingering session named \"" + name + "\""));
    });
  }
  gather->left = targets.size();
  if (targets.empty()) {
    return late_.post([gather] { gather->done(std::move(gather->outcomes)); });
  }
  const Owner who = owners_.get(owner);
  for (auto& s : targets) {
    SpawnOptions options;
    options.type = s.type;
    options.name = s.name;
    options.options["attach"] = s.key;
    service_.spawn(who, std::move(options), [gather, name = s.name](Result<SpawnResult> result) {
      AttachOutcome o;
      o.name = name;
      if (result) {
        o.session = std::move(result.value());
      } else {
        o.error = result.error();
      }
      gather->outcomes.push_back(std::move(o));
      if (--gather->left > 0) return;
      // Named: that session's failure is the answer.
      if (gather->named) {
        for (const auto& out : gather->outcomes) {
          if (out.error) return gather->done(out.error);
        }
      }
      gather->done(std::move(gather->outcomes));
    });
  }
}

void Engine::leave(Callback<void> done) {
  if (settings_.detach_lingering && !shutting_down()) settings_.detach_lingering();
  shutdown(std::move(done));
}

void Engine::shutdown(Callback<void> done) {
  if (shutdown_ == Shutdown::settled) {
    late_.post([done = std::move(done), result = dispose_result_] { done(result); });
    return;
  }
  shutdown_waiters_.push_back(std::move(done));
  if (shutdown_ != Shutdown::none) return;
  shutdown_ = Shutdown::disposing;
  service_.dispose([this](Status result) {
    shutdown_ = Shutdown::disposed;
    dispose_result_ = std::move(result);
    settle_if_quiet();
  });
}

void Engine::settle_if_quiet() {
  if (shutdown_ != Shutdown::disposed || pending_ != 0) return;
  shutdown_ = Shutdown::settled;
  // The service is disposed: drop what still points into it.
  waits_.clear();
  sends_.clear();
  opens_.clear();
  auto waiters = std::move(shutdown_waiters_);
  shutdown_waiters_.clear();
  for (auto& waiter : waiters) waiter(dispose_result_);
}

}  // namespace dshpty::engine
