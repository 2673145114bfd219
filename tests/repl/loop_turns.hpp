// Turning a test's private loop until a condition holds, without sleeping: each turn
// runs whatever is ready (EVRUN_NOWAIT), so a bound on turns, not on time, ends a wait.
#pragma once

#include <ev.h>

namespace dshpty::test {

template <class Pred>
bool run_until(struct ev_loop* loop, Pred pred, int max_iterations = 100000) {
  for (int i = 0; i < max_iterations; ++i) {
    if (pred()) return true;
    ev_run(loop, EVRUN_NOWAIT);
  }
  return pred();
}

}  // namespace dshpty::test
