// Figure 2, the send round trip of `true` to its prompt, for dshpty and the bare PTY loop
// side by side: one session each, their sends alternating, so both see the same machine
// from moment to moment; each sample classed by its wake mode (wake_mode.hpp).
#pragma once

#include "plan.hpp"
#include "report.hpp"

namespace bench {

void measure_send_side_by_side(const Plan& plan, Report& report);

// DSHPTY_BENCH_PROFILE=1: figure 2 runs dshpty's round trips alone, with nothing else in its
// process (no bare loops, no peers, no per-round /proc reads), for `perf record`.
bool profiling_sends();

// The metric of figure 2's rows for one wake mode: "us, one CPU", "us, two CPUs".
std::string send_metric(const char* mode_name);

}  // namespace bench
