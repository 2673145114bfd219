// The limits: the same bash (or flood command) on a PTY in this process, driven with plain
// blocking reads and writes — nothing between the kernel and the measurement.
#pragma once

#include "plan.hpp"
#include "report.hpp"

namespace bench {

// Figures 1-3 for the bare PTY; the rows name subject "bare PTY (limit)".
void measure_bare(const Plan& plan, Report& report);

}  // namespace bench
