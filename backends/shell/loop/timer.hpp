// Timer: one libev timer owned by an object. Durations go in as chrono, the owner's member
// function comes out, and the destructor stops it, so no owner keeps a trampoline, an
// ev_timer_init and a stop list of its own. seconds() is the one conversion to libev's time.
#pragma once

#include <ev.h>

#include <chrono>

namespace dshpty::shell {

// libev counts time in seconds as a double.
inline double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

class Timer {
 public:
  Timer() = default;
  ~Timer() { stop(); }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Binds the timer to `loop` and `(owner->*Method)()`. Called once, before any start.
  template <auto Method, class Owner>
  void bind(struct ev_loop* loop, Owner* owner) {
    loop_ = loop;
    ev_timer_init(&watcher_, [](struct ev_loop*, ev_timer* w, int) {
      (static_cast<Owner*>(w->data)->*Method)();
    }, 0., 0.);
    watcher_.data = owner;
  }

  // (Re)starts it to fire after `after`, then every `repeat` if that is not zero.
  void start(std::chrono::nanoseconds after, std::chrono::nanoseconds repeat = {}) {
    stop();
    ev_timer_set(&watcher_, seconds(after), seconds(repeat));
    ev_timer_start(loop_, &watcher_);
  }
  // Starts it only if it is not running: a wait already under way keeps its deadline.
  void start_if_idle(std::chrono::nanoseconds after, std::chrono::nanoseconds repeat = {}) {
    if (!active()) start(after, repeat);
  }
  // libev's ev_timer_again: counts `repeat` afresh from now (stops it if `repeat` is zero).
  void again(std::chrono::nanoseconds repeat) {
    watcher_.repeat = seconds(repeat);
    ev_timer_again(loop_, &watcher_);
  }
  void again() { ev_timer_again(loop_, &watcher_); }
  void stop() {
    if (loop_ != nullptr) ev_timer_stop(loop_, &watcher_);
  }
  bool active() const { return ev_is_active(&watcher_); }
  // The repeat it runs with now (what start or again set last).
  std::chrono::nanoseconds repeat() const {
    return std::chrono::round<std::chrono::nanoseconds>(std::chrono::duration<double>(watcher_.repeat));
  }

 private:
  struct ev_loop* loop_ = nullptr;
  ev_timer watcher_{};
};

}  // namespace dshpty::shell
