// Delta debugging (Zeller's ddmin) over a failing trace: drop chunks of ops, then single
// ops, then simplify the ops that remain, keeping every change that still fails the same
// way (same violation category), until nothing more can go or the budget is spent.
#pragma once

#include <cstddef>
#include <functional>

#include "trace.hpp"

namespace dshpty::fuzz {

// `still_fails` runs a candidate; it is called at most `budget` times.
Trace shrink(Trace failing, const std::function<bool(const Trace&)>& still_fails, std::size_t budget = 4000);

}  // namespace dshpty::fuzz
