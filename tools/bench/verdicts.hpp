// The targets, checked against a finished report. Where a peer was skipped, the
// issue's own reference number for it stands in, and the verdict says so.
#pragma once

#include "report.hpp"

namespace bench {

void judge_targets(Report& report);

}  // namespace bench
