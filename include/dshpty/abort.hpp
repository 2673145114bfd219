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

// Unsubscribes its callback when destroyed or reset(). Move-only; owned by the subscriber.
// Outliving its signal is harmless (it then holds nothing).
class AbortSubscription {
 public:
  AbortSubscription() = default;  // subscribes nothing
  // Takes over other's subscription; other is left empty.
  AbortSubscription(AbortSubscription&& other) noexcept;
  // Ends this one's subscription, then takes over other's.
  AbortSubscription& operator=(AbortSubscription&& other) noexcept;
  AbortSubscription(const AbortSubscription&) = delete;
  AbortSubscription& operator=(const AbortSubscription&) = delete;
  ~AbortSubscription();  // unsubscribes
  // Unsubscribes now (the callback is dropped without running). Idempotent.
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
  AbortSignal() = default;  // a signal that never aborts

  // True once its controller aborted.
  bool aborted() const noexcept;
  // The reason given to abort() (the same object: identity is the point); null while not
  // aborted.
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

// Owned by whoever may abort; its signals may outlive it (they then never abort).
class AbortController {
 public:
  AbortController();  // not aborted
  // A view of this controller's abort, cheap to copy.
  AbortSignal signal() const noexcept;
  // True once abort() succeeded.
  bool aborted() const noexcept;
  // Aborts with `reason` (non-null) and runs the subscribers. Returns false, and changes
  // nothing, when already aborted.
  bool abort(Error reason);

 private:
  std::shared_ptr<detail::AbortState> state_;
};

}  // namespace dshpty
