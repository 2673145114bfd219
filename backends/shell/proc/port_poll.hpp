// How often a wait for a TCP port looks (`until: {port}`; docs/shell-backend.md,
// "Conditions"). No event says a socket started listening (sock_diag multicasts only a
// socket's destruction), so a waiting send polls; a look costs one netlink dump filtered to
// LISTEN and a stat a process (proc::scan_port), so it polls fast while the wait is young,
// when most servers come up, and backs off as it grows old. Only while a send waits on a
// port: an idle session keeps no timer.
#pragma once

#include <chrono>

namespace dshpty::proc {

// The interval after a wait of `waited` (measured: docs/performance.md, "Waiting for a port").
inline std::chrono::milliseconds port_poll_interval(std::chrono::duration<double> waited) {
  using namespace std::chrono_literals;
  if (waited < 10s) return 2ms;
  if (waited < 60s) return 10ms;
  return 100ms;
}

}  // namespace dshpty::proc
