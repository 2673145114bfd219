// Spawn admission (backends/shell/spawn_admission.hpp) with stand-in spawns: the bound on
// spawns in flight, first come first started, each completion exactly once, a queued spawn
// cancelled by its signal, and the bound following the machine's idle CPU time (an injected
// meter). Nothing is started: the spawns are callbacks the test completes.
#include <doctest/doctest.h>
#include <ev.h>

#include <functional>
#include <memory>
#include <vector>

#include "spawn_admission.hpp"

using dshpty::AbortController;
using dshpty::BackendSession;
using dshpty::Result;
using dshpty::SpawnCallback;
using dshpty::shell::CpuTimes;
using dshpty::shell::SpawnAdmission;

namespace {

struct Rig {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  CpuTimes times;
  double idle_share = 0.0;  // what the meter says of each window
  std::unique_ptr<SpawnAdmission> admission;
  std::vector<int> started;                  // in start order
  std::vector<SpawnCallback> running;        // by index of admission
  std::vector<int> completions;              // per index: how many times done ran
  std::vector<bool> failed;

  explicit Rig(unsigned cpus) {
    admission = std::make_unique<SpawnAdmission>(loop, cpus, [this]() -> std::optional<CpuTimes> {
      times.idle += static_cast<std::uint64_t>(idle_share * 100);
      times.busy += static_cast<std::uint64_t>((1 - idle_share) * 100);
      return times;
    });
  }
  ~Rig() {
    admission.reset();
    ev_loop_destroy(loop);
  }
  int admit(dshpty::AbortSignal signal = {}) {
    const int i = static_cast<int>(completions.size());
    completions.push_back(0);
    failed.push_back(false);
    running.emplace_back();
    admission->admit(
        signal, [this, i](SpawnCallback done) { started.push_back(i), running[i] = std::move(done); },
        [this, i](Result<std::unique_ptr<BackendSession>> r) {
          ++completions[i];
          failed[i] = !r.ok();
        });
    return i;
  }
  // Completes spawn i as a failure (no session to hand over), then lets the loop run its
  // posted work (the queue's next starts).
  void finish(int i) {
    SpawnCallback done = std::move(running[i]);
    REQUIRE(done);
    done(dshpty::make_error(dshpty::Code::BACKEND_FAILED, "stand-in"));
    turn();
  }
  void turn() { ev_run(loop, EVRUN_NOWAIT); }
  // Lets the admission's sampling window pass (real time: the bound is measured in it).
  void pass_window() {
    ev_timer t;
    ev_timer_init(&t, [](struct ev_loop* l, ev_timer*, int) { ev_break(l, EVBREAK_ONE); },
                  SpawnAdmission::kSampleEvery * 1.5, 0.);
    ev_timer_start(loop, &t);
    ev_run(loop, 0);
  }
};

}  // namespace

TEST_CASE("admission: at most the bound in flight, started in order, each completes once") {
  Rig rig(1);
  const std::size_t bound = rig.admission->limit();
  CHECK(bound == SpawnAdmission::kStartPerCpu);
  for (int i = 0; i < 10; ++i) rig.admit();
  CHECK(rig.admission->in_flight() == bound);
  CHECK(rig.admission->queued() == 10 - bound);
  int next = 0;
  while (next < static_cast<int>(rig.started.size())) {
    CHECK(rig.admission->in_flight() <= rig.admission->limit());
    rig.finish(rig.started[next++]);
  }
  CHECK(next == 10);
  for (int i = 0; i < 10; ++i) {
    CHECK(rig.started[i] == i);
    CHECK(rig.completions[i] == 1);
  }
  CHECK(rig.admission->peak_in_flight() == bound);
  CHECK(rig.admission->in_flight() == 0);
}

TEST_CASE("admission: a queued spawn whose signal aborts completes with the reason, once, and never starts") {
  Rig rig(1);
  AbortController cancel;
  for (int i = 0; i < 2; ++i) rig.admit();
  const int queued = rig.admit(cancel.signal());
  const int after = rig.admit();
  CHECK(rig.admission->queued() == 2);
  cancel.abort(dshpty::make_error(dshpty::Code::ABORTED, "cancelled while queued"));
  CHECK(rig.completions[queued] == 0);  // from the loop, never inside abort()
  rig.turn();
  CHECK(rig.completions[queued] == 1);
  CHECK(rig.failed[queued]);
  CHECK(rig.admission->queued() == 1);
  rig.finish(0);
  rig.finish(1);
  rig.finish(after);
  CHECK(rig.started == std::vector<int>{0, 1, after});
  CHECK(rig.completions[queued] == 1);
  // Already aborted when it arrives: completed from the loop, never queued.
  const int late = rig.admit(cancel.signal());
  CHECK(rig.admission->queued() == 0);
  rig.turn();
  CHECK(rig.completions[late] == 1);
}

TEST_CASE("admission: idle CPUs with spawns waiting raise the bound; busy ones lower it to one a CPU") {
  Rig rig(2);
  const std::size_t start = rig.admission->limit();
  for (int i = 0; i < 200; ++i) rig.admit();
  rig.idle_share = 0.5;
  int next = 0;
  for (int round = 0; round < 3; ++round) {
    rig.pass_window();
    rig.finish(rig.started[next++]);
  }
  CHECK(rig.admission->limit() == start + 3);
  CHECK(rig.admission->in_flight() == rig.admission->limit());
  rig.idle_share = 0.0;
  for (int round = 0; round < 10; ++round) {
    rig.pass_window();
    rig.finish(rig.started[next++]);
  }
  CHECK(rig.admission->limit() == 2);  // the floor: the CPU count
  CHECK(rig.admission->in_flight() <= 2 + 3);
  while (next < static_cast<int>(rig.started.size())) rig.finish(rig.started[next++]);
  CHECK(next == 200);
  for (int c : rig.completions) CHECK(c == 1);
}
