// dshpty itself: the Service with the shell backend (supervisor helper, sanitizer and
// scrollback included), measured the way a host would use it.
#pragma once

#include "plan.hpp"
#include "report.hpp"

namespace bench {

// Figures 1-3 (subject "dshpty").
void measure_dshpty(const Plan& plan, Report& report);
// Figure 4: close of a session whose tree has 1, 10, 1,000 processes, to quiescence; and
// of two trees that ignore HUP/TERM (one still forking), with no grace before SIGKILL.
void measure_kill(const Plan& plan, Report& report);
// Figure 5: many sessions on one loop: open, memory, idle cost, close-all.
void measure_scale(const Plan& plan, Report& report);

}  // namespace bench
