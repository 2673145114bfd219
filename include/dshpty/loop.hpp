// Deferred: runs callbacks from a libev loop, after the call that posted them has returned.
// Every asynchronous completion in dshpty goes through one, so no callback ever runs inside
// the call that started its operation. Backends use it for the same guarantee.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

struct ev_loop;

namespace dshpty {

class Deferred {
 public:
  // Uses `loop` (any libev loop, default or not); the loop must outlive this object.
  explicit Deferred(struct ev_loop* loop);
  ~Deferred();  // drops pending callbacks without running them
  Deferred(const Deferred&) = delete;
  Deferred& operator=(const Deferred&) = delete;

  // Queues fn to run from the loop, in FIFO order, never inside post(). Posted while the
  // loop runs its callbacks (this queue's own included), it runs once the posting callback
  // has returned, before the loop polls again; posted from outside ev_run, on the next
  // iteration. A callback posted while the queue runs waits for the batch it was posted in
  // to finish, and a queue runs at most 16 batches an iteration: one that re-posts itself,
  // or queues that post to each other, cannot starve I/O.
  // The queue owns fn until it runs (or is dropped with the queue).
  void post(std::function<void()> fn);
  // Callbacks queued and not yet run.
  std::size_t pending() const noexcept;
  // The loop given to the constructor (not owned).
  struct ev_loop* loop() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dshpty
