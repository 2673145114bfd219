#include "dshpty/loop.hpp"

#include <ev.h>

#include <deque>

namespace dshpty {

// One zero-delay timer per queue: libev runs an expired timer on the next iteration and
// polls with a zero timeout while one is pending, so a post never waits for I/O. (An
// ev_idle would starve while other watchers stay busy.)
struct Deferred::Impl {
  struct ev_loop* loop;
  ev_timer timer;
  std::deque<std::function<void()>> queue;
  std::deque<std::function<void()>> running;  // this turn's batch
  bool* alive_flag = nullptr;  // set while run() executes, cleared if we are destroyed

  static void on_timer(struct ev_loop*, ev_timer* w, int) {
    static_cast<Impl*>(w->data)->run();
  }

  void run() {
    // Only what was queued before this turn: later posts wait for the next iteration.
    running.swap(queue);
    bool alive = true;
    alive_flag = &alive;
    while (!running.empty()) {
      auto fn = std::move(running.front());
      running.pop_front();
      fn();
      if (!alive) return;  // a callback destroyed this queue: drop the rest, as documented
    }
    alive_flag = nullptr;
    if (!queue.empty()) arm();
  }

  void arm() {
    if (!ev_is_active(&timer)) {
      ev_timer_set(&timer, 0., 0.);
      ev_timer_start(loop, &timer);
    }
  }
};

Deferred::Deferred(struct ev_loop* loop) : impl_(std::make_unique<Impl>()) {
  impl_->loop = loop;
  ev_timer_init(&impl_->timer, &Impl::on_timer, 0., 0.);
  impl_->timer.data = impl_.get();
}

Deferred::~Deferred() {
  ev_timer_stop(impl_->loop, &impl_->timer);
  if (impl_->alive_flag) *impl_->alive_flag = false;
}

void Deferred::post(std::function<void()> fn) {
  impl_->queue.push_back(std::move(fn));
  impl_->arm();
}

std::size_t Deferred::pending() const noexcept { return impl_->queue.size() + impl_->running.size(); }

struct ev_loop* Deferred::loop() const noexcept { return impl_->loop; }

}  // namespace dshpty
