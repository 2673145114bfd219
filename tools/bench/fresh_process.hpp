// Runs one figure in a forked child and merges its rows into the parent's report. Each figure
// then starts in a process with no CPU-time history, as every peer (its own fresh process)
// does: on a loaded machine the scheduler would otherwise wake a bench that just spent
// seconds reading a 256 MiB flood later than a fresh peer, and bias figure 2 against the
// in-process subjects (the bare loop and dshpty). It also frees each figure's memory.
#pragma once

#include <functional>

#include "report.hpp"

namespace bench {

// Called before any loop or thread exists. If the child dies, one skipped row says so.
void run_in_fresh_process(Report& report, const std::function<void(Report&)>& figure);

}  // namespace bench
