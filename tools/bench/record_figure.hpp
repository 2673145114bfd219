// Recordings' cost (docs/watch.md, "Recordings"): a recorded session's send round trip and
// throughput against an unrecorded one's, in the same run, their rounds alternating so both
// see the same machine from moment to moment.
#pragma once

#include "plan.hpp"
#include "report.hpp"

namespace bench {

inline constexpr const char* kFigRecord = "6 recording";

// Figure 6 (`--only 6` alone): rows "dshpty, unrecorded" and "dshpty, recorded", send
// p50 in us and throughput in MB/s.
void measure_recording(const Plan& plan, Report& report);

}  // namespace bench
