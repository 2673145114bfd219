// The peers a user would pick instead: pexpect and node-pty (each a script beside this file,
// run as its own process) and tmux (driven from here, one client process per command).
// A peer that is not installed is reported as skipped with the reason, never faked.
#pragma once

#include "plan.hpp"
#include "report.hpp"

namespace bench {

void measure_pexpect(const Plan& plan, Report& report);
void measure_node_pty(const Plan& plan, Report& report);
void measure_tmux(const Plan& plan, Report& report);

}  // namespace bench
