// How many spawns run at once. A spawn is mostly CPU work in processes the host does not
// run (the helper, bwrap, the shell's start-up files), so posting ten thousand at once
// would start ten thousand shells competing for two CPUs: every one of them late, start-up
// timeouts firing, ptys and fds taken long before any session is usable. Admission runs
// as many as keep the CPUs busy and queues the rest in order.
//
// The bound is measured, not configured: it starts at twice the CPUs this process may run
// on, and at each spawn's end (at most once per kSampleEvery) looks at how idle the
// machine's CPUs were since the last look (/proc/stat): idle CPUs with spawns waiting raise
// it by one, CPUs busy all the time lower it by one, never below the CPU count nor above
// kMaxPerCpu a CPU. Everything here is O(1) per spawn: a queue, a counter, one small read.
//
// Each admitted spawn's `done` is called exactly once: the spawn's own completion, or, for
// one still queued when its signal aborts (a caller's cancel, an owner's or the service's
// disposal), the abort's reason from the loop; the queue then moves on.
#pragma once

#include <ev.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>

#include "dshpty/abort.hpp"
#include "dshpty/backend.hpp"
#include "dshpty/loop.hpp"

namespace dshpty::shell {

// The machine's CPU time so far, all CPUs together (clock ticks): the idle part counts
// iowait as idle.
struct CpuTimes {
  std::uint64_t busy = 0;
  std::uint64_t idle = 0;
};
// Reads the first line of /proc/stat; nullopt where it cannot be read (the bound then stays).
std::optional<CpuTimes> read_cpu_times();

class SpawnAdmission {
 public:
  // Starts one spawn; it must call its argument exactly once, from the loop.
  using Start = std::function<void(SpawnCallback done)>;
  using CpuClock = std::function<std::optional<CpuTimes>()>;

  // `cpus`: how many CPUs this process may run on (0: asked of the kernel); `clock`: the
  // idle meter (default read_cpu_times), a seam for tests.
  SpawnAdmission(struct ev_loop* loop, unsigned cpus = 0, CpuClock clock = {});
  ~SpawnAdmission();  // queued spawns are dropped without a call (their owner is gone too)
  SpawnAdmission(const SpawnAdmission&) = delete;
  SpawnAdmission& operator=(const SpawnAdmission&) = delete;

  // Runs `start` now if fewer than limit() spawns are in flight, else queues it behind the
  // others. `signal` aborting while it waits completes `done` with the reason instead.
  void admit(AbortSignal signal, Start start, SpawnCallback done);

  std::size_t in_flight() const noexcept { return in_flight_; }
  std::size_t queued() const noexcept { return queue_.size(); }
  std::size_t limit() const noexcept { return limit_; }
  // The most that were ever in flight at once (for tests and the bench).
  std::size_t peak_in_flight() const noexcept { return peak_; }

  static constexpr unsigned kStartPerCpu = 2;
  static constexpr unsigned kMaxPerCpu = 32;
  // Shorter windows say more about the scheduler's tick than about the load.
  static constexpr ev_tstamp kSampleEvery = 0.025;
  // Idle share of the window above which a waiting spawn could have run, and below which
  // the CPUs were saturated.
  static constexpr double kIdleToGrow = 0.10;
  static constexpr double kIdleToShrink = 0.02;

 private:
  struct Waiting {
    Start start;
    SpawnCallback done;
    AbortSubscription abort;
  };
  using Queue = std::list<Waiting>;

  void run(Start start, SpawnCallback done);
  void finished();
  void pump();
  void adjust();

  struct ev_loop* loop_;
  CpuClock clock_;
  std::size_t floor_;
  std::size_t ceiling_;
  std::size_t limit_;
  std::size_t in_flight_ = 0;
  std::size_t peak_ = 0;
  Queue queue_;
  std::optional<CpuTimes> last_;
  ev_tstamp last_at_ = 0;
  Deferred deferred_;
  // Outlived by completions of spawns in flight: they find it gone and do nothing.
  std::shared_ptr<SpawnAdmission*> self_;
};

}  // namespace dshpty::shell
