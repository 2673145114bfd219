#include "dshpty/abort.hpp"

#include <cassert>
#include <map>

namespace dshpty {

namespace detail {
struct AbortState {
  Error reason;  // set once
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, std::function<void(const Error&)>> listeners;
  // An any() signal keeps its subscriptions to its inputs; they end with it.
  std::vector<AbortSubscription> inputs;

  bool abort(Error why) {
    if (reason) return false;
    assert(why && "abort needs a reason");
    reason = std::move(why);
    // A listener may unsubscribe others (or itself): walk by id, skipping the removed.
    std::vector<std::uint64_t> ids;
    ids.reserve(listeners.size());
    for (auto& [id, fn] : listeners) ids.push_back(id);
    Error why_copy = reason;  // listeners may drop the last reference to this state
    for (std::uint64_t id : ids) {
      auto it = listeners.find(id);
      if (it == listeners.end()) continue;
      auto fn = std::move(it->second);
      listeners.erase(it);
      fn(why_copy);
    }
    inputs.clear();
    return true;
  }
};
}  // namespace detail

AbortSubscription::AbortSubscription(std::weak_ptr<detail::AbortState> state,
                                     std::uint64_t id) noexcept
    : state_(std::move(state)), id_(id) {}

AbortSubscription::AbortSubscription(AbortSubscription&& other) noexcept
    : state_(std::move(other.state_)), id_(other.id_) {
  other.id_ = 0;
}

AbortSubscription& AbortSubscription::operator=(AbortSubscription&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
}

AbortSubscription::~AbortSubscription() { reset(); }

void AbortSubscription::reset() noexcept {
  if (id_ == 0) return;
  if (auto state = state_.lock()) state->listeners.erase(id_);
  state_.reset();
  id_ = 0;
}

AbortSignal::AbortSignal(std::shared_ptr<detail::AbortState> state) noexcept
    : state_(std::move(state)) {}

bool AbortSignal::aborted() const noexcept { return state_ && state_->reason; }

Error AbortSignal::reason() const { return state_ ? state_->reason : Error{}; }

AbortSubscription AbortSignal::subscribe(std::function<void(const Error&)> fn) const {
  if (!state_ || state_->reason) return {};
  std::uint64_t id = state_->next_id++;
  state_->listeners.emplace(id, std::move(fn));
  return AbortSubscription(state_, id);
}

AbortSignal AbortSignal::any(std::vector<AbortSignal> signals) {
  auto state = std::make_shared<detail::AbortState>();
  for (const AbortSignal& input : signals) {
    if (input.aborted()) {
      state->reason = input.reason();
      state->inputs.clear();
      return AbortSignal(std::move(state));
    }
  }
  std::weak_ptr<detail::AbortState> weak = state;
  for (const AbortSignal& input : signals) {
    state->inputs.push_back(input.subscribe([weak](const Error& why) {
      if (auto combined = weak.lock()) combined->abort(why);
    }));
  }
  return AbortSignal(std::move(state));
}

AbortController::AbortController() : state_(std::make_shared<detail::AbortState>()) {}

AbortSignal AbortController::signal() const noexcept { return AbortSignal(state_); }

bool AbortController::aborted() const noexcept { return static_cast<bool>(state_->reason); }

bool AbortController::abort(Error reason) {
  auto keep = state_;
  return keep->abort(std::move(reason));
}

}  // namespace dshpty
