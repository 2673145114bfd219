// A spawn's limits against the operator's defaults and ceilings (ShellConfig::limits,
// ShellConfig::limit_ceilings): what the session gets, or why not.
#pragma once

#include "dshpty/result.hpp"
#include "dshpty/session.hpp"

namespace dshpty::shell::limits {

// Each kind: the spawn's value if set (INVALID_ARGUMENT naming "limits.KIND" when out of
// range or above its ceiling), else the default, else the ceiling; a default above its
// ceiling takes the ceiling.
Result<Limits> resolve_limits(const Limits& asked, const Limits& defaults, const Limits& ceilings);

}  // namespace dshpty::shell::limits
