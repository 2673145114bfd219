#include "dshpty/loop.hpp"

#include <ev.h>

#include <deque>

namespace dshpty {

// Two ways to reach the loop. A post made while the loop runs its callbacks (from an I/O
// callback, from another queue's run, from this queue's own) feeds `fed`, a watcher that is
// never started, straight into the current pass: it runs once the caller has returned to
// libev, before the loop polls again, so an operation that completes in steps (backend,
// service, the host's next start) costs no poll and no loop iteration per step. `fed` has
// the lowest priority: libev runs the lowest last in every version, so a feed made from a
// callback of any priority is still run in this pass and never waits through a blocking
// poll. Feeds are bounded per iteration, so a callback that re-posts itself, or queues
// that post to each other, still let the loop poll.
// A post from outside ev_run, or past the bound, arms a zero-delay timer: libev runs an
// expired timer on the next iteration and polls with a zero timeout while one is pending,
// so a post never waits for I/O. (An ev_idle would starve while other watchers stay busy.)
struct Deferred::Impl {
  static constexpr int kFeedsPerIteration = 16;

  struct ev_loop* loop;
  ev_timer timer;
  ev_timer fed;
  std::deque<std::function<void()>> queue;
  std::deque<std::function<void()>> running;  // the batch being run
  bool* alive_flag = nullptr;  // set while run() executes, cleared if we are destroyed
  unsigned feed_iteration = 0;
  int feeds = 0;

  static void on_timer(struct ev_loop*, ev_timer* w, int) {
    static_cast<Impl*>(w->data)->run();
  }

  void run() {
    ev_timer_stop(loop, &timer);  // however it was armed, this batch takes all that is queued
    // Only what was queued before this batch: later posts make a batch of their own.
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
    if (ev_is_pending(&fed)) return;  // this pass runs the queue already
    if (ev_depth(loop) > 0 && feed_allowed()) {
      ev_feed_event(loop, &fed, EV_TIMER);
      return;
    }
    arm_timer();
  }

  bool feed_allowed() {
    const unsigned iteration = ev_iteration(loop);
    if (iteration != feed_iteration) {
      feed_iteration = iteration;
      feeds = 0;
    }
    return feeds++ < kFeedsPerIteration;
  }

  void arm_timer() {
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
  ev_timer_init(&impl_->fed, &Impl::on_timer, 0., 0.);
  ev_set_priority(&impl_->fed, EV_MINPRI);
  impl_->fed.data = impl_.get();
}

Deferred::~Deferred() {
  ev_timer_stop(impl_->loop, &impl_->timer);
  ev_timer_stop(impl_->loop, &impl_->fed);  // never started: this drops a pending feed
  if (impl_->alive_flag) *impl_->alive_flag = false;
}

void Deferred::post(std::function<void()> fn) {
  impl_->queue.push_back(std::move(fn));
  impl_->arm();
}

std::size_t Deferred::pending() const noexcept { return impl_->queue.size() + impl_->running.size(); }

struct ev_loop* Deferred::loop() const noexcept { return impl_->loop; }

}  // namespace dshpty
