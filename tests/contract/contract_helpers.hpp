// Shared helpers for the contract suite: a private libev loop, a bounded "run until",
// callback captures that count calls and catch a completion inside its initiating call,
// and a fixture with a Service and a registered ScriptedBackend that always disposes.
#pragma once

#include <doctest/doctest.h>
#include <ev.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dshpty/scripted.hpp"
#include "dshpty/service.hpp"

namespace contract {

using namespace dshpty;

// A private loop per test, so nothing leaks between cases.
struct Loop {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  Loop() { REQUIRE(loop != nullptr); }
  ~Loop() { ev_loop_destroy(loop); }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;
};

// Runs loop iterations until pred() holds. Bounded by an iteration cap and a generous
// wall-clock cap (a safety net against a hung test, not a timing assertion). No sleeps:
// every iteration polls without blocking.
template <class Pred>
bool run_until(struct ev_loop* loop, Pred pred, int max_iterations = 100000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0; i < max_iterations; ++i) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() > deadline) break;
    ev_run(loop, EVRUN_NOWAIT);
  }
  return pred();
}

// Runs `n` loop iterations: for "nothing more happens" checks.
inline void turn(struct ev_loop* loop, int n = 50) {
  for (int i = 0; i < n; ++i) ev_run(loop, EVRUN_NOWAIT);
}

// Records the completions of one asynchronous call. Wrap the initiating call in during()
// so a completion inside it is caught.
template <class T>
class Capture {
 public:
  using Then = std::function<void(const Result<T>&)>;

  // The callback to hand to the service. `then` runs after recording, inside the callback.
  Callback<T> cb(Then then = {}) {
    auto s = s_;
    return [s, then](Result<T> r) {
      ++s->calls;
      if (s->initiating) s->inside = true;
      if (!s->result) s->result.emplace(std::move(r));
      if (then) then(*s->result);
    };
  }
  template <class F>
  decltype(auto) during(F&& f) {
    s_->initiating = true;
    struct Reset {
      State* s;
      ~Reset() { s->initiating = false; }
    } reset{s_.get()};
    return f();
  }

  int calls() const { return s_->calls; }
  bool done() const { return s_->calls > 0; }
  bool inside() const { return s_->inside; }  // a completion ran inside the initiating call
  bool ok() const { return s_->result && s_->result->ok(); }
  const Result<T>& result() const {
    REQUIRE(s_->result.has_value());
    return *s_->result;
  }
  Error error() const {
    REQUIRE(s_->result.has_value());
    REQUIRE_FALSE(s_->result->ok());
    return s_->result->error();
  }

 private:
  struct State {
    int calls = 0;
    bool initiating = false;
    bool inside = false;
    std::optional<Result<T>> result;
  };
  std::shared_ptr<State> s_ = std::make_shared<State>();
};

inline Code code_of(const Error& e) { return e ? e->code : Code::ABORTED; }

// True when `needle` (by identity) is `tree` or anywhere below it.
inline bool contains_error(const Error& tree, const Error& needle) {
  if (!tree) return false;
  if (tree == needle) return true;
  for (const Error& child : tree->errors) {
    if (contains_error(child, needle)) return true;
  }
  return false;
}

// True when some error in the tree has this message.
inline bool contains_message(const Error& tree, const std::string& message) {
  if (!tree) return false;
  if (tree->message == message) return true;
  for (const Error& child : tree->errors) {
    if (contains_message(child, message)) return true;
  }
  return false;
}

inline std::optional<RecordView> record_of(const Service& service, const std::string& id) {
  for (const RecordView& r : service.records()) {
    if (r.id == id) return r;
  }
  return std::nullopt;
}

inline std::vector<std::string> ids_of(const std::vector<SessionSnapshot>& list) {
  std::vector<std::string> ids;
  for (const auto& s : list) ids.push_back(s.id);
  return ids;
}

// A Service on a private loop with one ScriptedBackend ("scripted") registered. Its
// destructor releases every gate the test made and disposes the service, so a failing test
// leaves nothing in flight.
struct Fixture {
  Loop loop_holder;
  struct ev_loop* loop = loop_holder.loop;
  Service service{loop};
  std::shared_ptr<ScriptedBackend> backend = std::make_shared<ScriptedBackend>(loop, "scripted");
  BackendRegistration registration;
  std::vector<std::shared_ptr<ScriptedGate>> gates;

  Fixture() {
    auto r = service.register_backend(backend);
    REQUIRE(r.ok());
    registration = *r;
  }
  ~Fixture() {
    for (auto& g : gates) g->open();
    Capture<void> disposed;
    service.dispose(disposed.cb());
    contract::run_until(loop, [&] { return disposed.done(); });
    // Whatever the disposal left (e.g. a backend that never settles) must not outlive us.
    contract::run_until(loop, [&] { return backend->pending() == 0; }, 1000);
  }
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  std::shared_ptr<ScriptedGate> gate() {
    gates.push_back(ScriptedGate::make());
    return gates.back();
  }

  bool run_until(std::function<bool()> pred) { return contract::run_until(loop, std::move(pred)); }
  void turn(int n = 50) { contract::turn(loop, n); }

  SpawnOptions options(std::optional<std::string> name = std::nullopt, AbortSignal signal = {},
                       std::string type = "scripted") {
    SpawnOptions o;
    o.type = std::move(type);
    o.name = std::move(name);
    o.signal = std::move(signal);
    return o;
  }

  // Starts a spawn and checks it did not complete inside the call.
  Capture<SpawnResult> start_spawn(const Owner& owner, SpawnOptions o) {
    Capture<SpawnResult> c;
    c.during([&] { service.spawn(owner, std::move(o), c.cb()); });
    CHECK_FALSE(c.done());
    return c;
  }

  // Spawns and runs the loop until it completes.
  Capture<SpawnResult> spawn(const Owner& owner, SpawnOptions o) {
    Capture<SpawnResult> c = start_spawn(owner, std::move(o));
    REQUIRE(run_until([&] { return c.done(); }));
    return c;
  }

  // Spawns a published session and returns its id.
  std::string spawn_ok(const Owner& owner, std::optional<std::string> name = std::nullopt) {
    Capture<SpawnResult> c = spawn(owner, options(std::move(name)));
    REQUIRE_MESSAGE(c.ok(), describe(c.result().ok() ? Error{} : c.result().error()));
    return c.result()->session.id;
  }

  // Kills and runs until it completes.
  Capture<bool> kill(const Owner& owner, const std::string& id, std::string reason = "model request") {
    Capture<bool> c;
    Status s = c.during([&] { return service.kill(owner, id, c.cb(), std::move(reason)); });
    REQUIRE_MESSAGE(s.ok(), describe(s.ok() ? Error{} : s.error()));
    CHECK_FALSE(c.done());
    REQUIRE(run_until([&] { return c.done(); }));
    return c;
  }

  Capture<void> dispose_owner(const Owner& owner) {
    Capture<void> c;
    c.during([&] { service.dispose_owner(owner, c.cb()); });
    CHECK_FALSE(c.done());
    return c;
  }

  Capture<void> dispose() {
    Capture<void> c;
    c.during([&] { service.dispose(c.cb()); });
    CHECK_FALSE(c.done());
    return c;
  }
};

}  // namespace contract
