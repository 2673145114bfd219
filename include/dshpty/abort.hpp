// Abort signals, in the manner of the web's AbortController: a controller aborts once with
// a reason (an Error with identity); its signals report it and run their subscribers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "dshpty/errors.hpp"

namespace dshpty {

namespace detail {
struct AbortState;
}

// Unsubscribes its callback when destroyed or reset(). Move-only.
class AbortSubscription {
 public:
  AbortSubscription() = default;
  AbortSubscription(AbortSubscription&& other) noexcept;
  AbortSubscription& operator=(AbortSubscription&& other) noexcept;
  AbortSubscription(const AbortSubscription&) = delete;
  AbortSubscription& operator=(const AbortSubscription&) = delete;
  ~AbortSubscription();
  void reset() noexcept;

 private:
  friend class AbortSignal;
  AbortSubscription(std::weak_ptr<detail::AbortState> state, std::uint64_t id) noexcept;
  std::weak_ptr<detail::AbortState> state_;
  std::uint64_t id_ = 0;
};

// A read-only view of an abort. A default-constructed signal never aborts. Cheap to copy;
// copies observe the same abort.
class AbortSignal {
 public:
  AbortSignal() = default;

  bool aborted() const noexcept;
  // The reason given to abort(); null while not aborted.
  Error reason() const;

  // Calls fn(reason) once, synchronously inside the abort() that aborts this signal.
  // Nothing is called if the signal is already aborted: check aborted() first. A callback
  // must not complete an operation directly (completions go through the loop); it may
  // subscribe or unsubscribe others. The subscription ends when the returned handle dies.
  [[nodiscard]] AbortSubscription subscribe(std::function<void(const Error&)> fn) const;

  // A signal that aborts with the reason of the first of `signals` to abort (already
  // aborted inputs: the first of them in order). Holds no reference that keeps the inputs'
  // controllers alive longer than the result.
  static AbortSignal any(std::vector<AbortSignal> signals);

 private:
  friend class AbortController;
  explicit AbortSignal(std::shared_ptr<detail::AbortState> state) noexcept;
  std::shared_ptr<detail::AbortState> state_;
};

class AbortController {
 public:
  AbortController();
  AbortSignal signal() const noexcept;
  bool aborted() const noexcept;
  // Aborts with `reason` (non-null) and runs the subscribers. Returns false, and changes
  // nothing, when already aborted.
  bool abort(Error reason);

 private:
  std::shared_ptr<detail::AbortState> state_;
};

}  // namespace dshpty
