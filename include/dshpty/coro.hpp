// An optional C++20 coroutine adaptor over Service, for hosts that prefer
//
//   dshpty::coro::Task agent(dshpty::Service& service, dshpty::Owner owner) {
//     dshpty::SpawnOptions shell{.type = "shell"};
//     auto opened = co_await dshpty::coro::spawn(service, owner, std::move(shell));
//     if (!opened) co_return;
//     dshpty::SendRequest ls{.text = "ls"};
//     auto sent = co_await dshpty::coro::send(service, owner, opened->session.id, std::move(ls));
//     ...
//   }
//
// to callbacks. Header-only; nothing here adds a thread or a second loop: every operation is
// started at once, on the caller's thread, and its coroutine is resumed from the operation's
// own completion callback, which the service already runs from the loop. So the code after
// a co_await runs inside a loop callback, exactly where the callback version would have run,
// and may call back into the service just as freely.
//
// Each factory (spawn, send, ...) starts its operation when called and returns an Operation:
// co_await it once to get the Result (a synchronous failure is ready at once and never
// suspends). Dropping an Operation without awaiting it is allowed: the operation still
// completes and its result is discarded.
//
// g++ 12 (a compiler bug, fixed later): a braced aggregate temporary inside a co_await
// expression, e.g. `co_await coro::spawn(s, o, {.type = "shell"})`, is destroyed twice
// (a double free). Name the SpawnOptions / SendRequest first, as above; clang is unaffected.
#pragma once

#include <cassert>
#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "dshpty/result.hpp"
#include "dshpty/service.hpp"
#include "dshpty/session.hpp"

namespace dshpty::coro {

// A started operation that completes with Result<T>. Awaitable once. Move-only. Never
// fails to construct; its completion may arrive before or after it is awaited.
template <class T>
class [[nodiscard]] Operation {
 public:
  // An operation that already failed (a synchronous failure); awaiting it does not suspend.
  static Operation failed(Error error) {
    Operation op;
    op.state_->result.emplace(std::move(error));
    return op;
  }

  // The callback that completes this operation; pass it as the service call's `done`.
  // Called from the loop, it stores the result and resumes the awaiting coroutine, if any.
  Callback<T> callback() const {
    return [state = state_](Result<T> result) {
      assert(!state->result && "a completion arrived twice");
      state->result.emplace(std::move(result));
      if (auto waiter = std::exchange(state->waiter, {})) waiter.resume();
      // Nothing may touch `state` here: the resumed coroutine may have destroyed anything.
    };
  }

  // The awaitable protocol: ready once completed; otherwise the coroutine waits for the
  // callback. Awaiting one Operation twice is a precondition failure (asserted).
  bool await_ready() const noexcept { return state_->result.has_value(); }
  void await_suspend(std::coroutine_handle<> waiter) noexcept {
    assert(!state_->waiter && "an Operation can be awaited only once");
    state_->waiter = waiter;
  }
  Result<T> await_resume() { return std::move(*state_->result); }

  // A pending operation, completed by whoever is given callback(): the factories below use
  // it, and a host may adapt a callback API of its own the same way.
  Operation() : state_(std::make_shared<State>()) {}

 private:
  struct State {
    std::optional<Result<T>> result;
    std::coroutine_handle<> waiter;
  };
  // Shared with the callback, so a completion that outlives the Operation is harmless.
  std::shared_ptr<State> state_;
};

// A send in flight: an Operation for its result plus the Send handle for read_output() and
// cancel() while it runs. The handle is null when start_send failed synchronously.
class [[nodiscard]] SendOperation : public Operation<SendResult> {
 public:
  // The service's Send (shared with it); null after a synchronous failure.
  const std::shared_ptr<Send>& handle() const noexcept { return handle_; }

 private:
  friend SendOperation send(Service&, const Owner&, std::string_view, SendRequest);
  SendOperation() = default;
  explicit SendOperation(Operation<SendResult> op) : Operation<SendResult>(std::move(op)) {}
  std::shared_ptr<Send> handle_;
};

// Service::spawn as an Operation: every failure comes through the result (as spawn's done).
inline Operation<SpawnResult> spawn(Service& service, const Owner& owner, SpawnOptions options) {
  Operation<SpawnResult> op;
  service.spawn(owner, std::move(options), op.callback());
  return op;
}

// Service::start_send as an Operation; a synchronous failure (SEND_ACTIVE, NO_SESSION, ...)
// is the ready result and handle() is then null.
inline SendOperation send(Service& service, const Owner& owner, std::string_view session_id,
                          SendRequest request) {
  SendOperation op;
  auto started = service.start_send(owner, session_id, std::move(request), op.callback());
  if (!started) return SendOperation(Operation<SendResult>::failed(started.error()));
  op.handle_ = std::move(started.value());
  return op;
}

// Service::signal as an Operation; a synchronous failure is the ready result.
inline Operation<SignalResult> signal(Service& service, const Owner& owner,
                                      std::string_view session_id, Signal sig) {
  Operation<SignalResult> op;
  Status started = service.signal(owner, session_id, sig, op.callback());
  if (!started) return Operation<SignalResult>::failed(started.error());
  return op;
}

// Service::kill as an Operation: true when this call closed the session, false when it
// joined a close in flight; a synchronous failure or the close error otherwise.
inline Operation<bool> kill(Service& service, const Owner& owner, std::string_view session_id,
                            std::string reason = "model request") {
  Operation<bool> op;
  Status started = service.kill(owner, session_id, op.callback(), std::move(reason));
  if (!started) return Operation<bool>::failed(started.error());
  return op;
}

// Service::dispose_owner as an Operation (CLEANUP_FAILED aggregates as there).
inline Operation<void> dispose_owner(Service& service, const Owner& owner) {
  Operation<void> op;
  service.dispose_owner(owner, op.callback());
  return op;
}

// Service::dispose as an Operation.
inline Operation<void> dispose(Service& service) {
  Operation<void> op;
  service.dispose(op.callback());
  return op;
}

// A detached coroutine: it starts running inside the call, runs to its first suspension,
// and frees itself when it finishes. done() tells a test (or a host) that it finished.
// An exception escaping the coroutine terminates the process (the library throws none;
// the host's own code should not let one escape a loop callback either).
// A task still suspended when the loop stops running is leaked: run the loop until its
// operations complete (they always do, exactly once).
class Task {
 public:
  struct promise_type {
    std::shared_ptr<bool> finished = std::make_shared<bool>(false);
    Task get_return_object() { return Task(finished); }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept { *finished = true; }
    void unhandled_exception() noexcept { std::terminate(); }
  };

  // True once the coroutine returned.
  bool done() const noexcept { return *finished_; }

 private:
  explicit Task(std::shared_ptr<bool> finished) : finished_(std::move(finished)) {}
  std::shared_ptr<bool> finished_;
};

}  // namespace dshpty::coro
