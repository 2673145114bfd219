#include "spawn_admission.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace dshpty::shell {

namespace {

unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<unsigned>(online) : 1;
}

}  // namespace

std::optional<CpuTimes> read_cpu_times() {
  // The first line only: "cpu  user nice system idle iowait irq softirq steal ...".
  char buf[256];
  const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  unsigned long long v[8] = {};
  if (std::sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                  &v[5], &v[6], &v[7]) < 5) {
    return std::nullopt;
  }
  CpuTimes t;
  t.idle = v[3] + v[4];
  t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return t;
}

SpawnAdmission::SpawnAdmission(struct ev_loop* loop, unsigned cpus, CpuClock clock)
    : loop_(loop),
      clock_(clock ? std::move(clock) : CpuClock(&read_cpu_times)),
      deferred_(loop),
      self_(std::make_shared<SpawnAdmission*>(this)) {
  const unsigned n = cpus ? cpus : usable_cpus();
  floor_ = n;
  ceiling_ = std::size_t{n} * kMaxPerCpu;
  limit_ = std::size_t{n} * kStartPerCpu;
}

SpawnAdmission::~SpawnAdmission() { *self_ = nullptr; }

void SpawnAdmission::admit(AbortSignal signal, Start start, SpawnCallback done) {
  if (signal.aborted()) {
    deferred_.post([done = std::move(done), reason = signal.reason()] { done(reason); });
    return;
  }
  if (in_flight_ < limit_ && queue_.empty()) return run(std::move(start), std::move(done));
  queue_.push_back(Waiting{std::move(start), std::move(done), {}});
  const Queue::iterator at = std::prev(queue_.end());
  at->abort = signal.subscribe([this, at](const Error& reason) {
    // Inside abort(): the queue entry goes now (its subscription with it: abort() has
    // already taken this callback out), its completion from the loop.
    SpawnCallback done = std::move(at->done);
    queue_.erase(at);
    deferred_.post([done = std::move(done), reason] { done(reason); });
  });
}

void SpawnAdmission::run(Start start, SpawnCallback done) {
  ++in_flight_;
  peak_ = std::max(peak_, in_flight_);
  if (!last_) {
    last_ = clock_();
    last_at_ = ev_now(loop_);
  }
  start([self = std::weak_ptr<SpawnAdmission*>(self_), done = std::move(done)](
            Result<std::unique_ptr<BackendSession>> result) mutable {
    // The slot is given back before the caller hears, so a caller that spawns again from
    // its callback finds it free.
    if (auto alive = self.lock(); alive && *alive) (*alive)->finished();
    done(std::move(result));
  });
}

void SpawnAdmission::finished() {
  --in_flight_;
  adjust();
  // Started from the loop, not inside another spawn's completion.
  if (!queue_.empty()) {
    deferred_.post([self = std::weak_ptr<SpawnAdmission*>(self_)] {
      if (auto alive = self.lock(); alive && *alive) (*alive)->pump();
    });
  }
}

void SpawnAdmission::pump() {
  while (in_flight_ < limit_ && !queue_.empty()) {
    Waiting next = std::move(queue_.front());
    queue_.pop_front();
    next.abort.reset();
    run(std::move(next.start), std::move(next.done));
  }
}

void SpawnAdmission::adjust() {
  const ev_tstamp now = ev_now(loop_);
  if (now - last_at_ < kSampleEvery) return;
  const std::optional<CpuTimes> times = clock_();
  if (!times || !last_) {
    last_ = times;
    last_at_ = now;
    return;
  }
  const std::uint64_t busy = times->busy - last_->busy;
  const std::uint64_t idle = times->idle - last_->idle;
  last_ = times;
  last_at_ = now;
  if (busy + idle == 0) return;
  const double idle_share = static_cast<double>(idle) / static_cast<double>(busy + idle);
  if (idle_share > kIdleToGrow && !queue_.empty() && in_flight_ + 1 >= limit_) {
    limit_ = std::min(ceiling_, limit_ + 1);
  } else if (idle_share < kIdleToShrink) {
    limit_ = std::max(floor_, limit_ - 1);
  }
}

}  // namespace dshpty::shell
