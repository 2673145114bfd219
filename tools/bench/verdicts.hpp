// The bench's targets (one table, in verdicts.cpp), checked against a finished report.
// Where a peer was skipped, the reference figure the target was set with stands in, and
// the verdict says so.
#pragma once

#include "report.hpp"

namespace bench {

void judge_targets(Report& report);

}  // namespace bench
