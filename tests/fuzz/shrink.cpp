#include "shrink.hpp"

#include <algorithm>

namespace dshpty::fuzz {

Trace shrink(Trace failing, const std::function<bool(const Trace&)>& still_fails, std::size_t budget) {
  std::size_t runs = 0;
  auto test = [&](const Trace& candidate) {
    if (runs >= budget) return false;
    ++runs;
    return still_fails(candidate);
  };

  // ddmin: try removing each of n chunks; on success keep the rest and coarsen, else refine.
  std::size_t n = 2;
  while (failing.size() >= 2 && runs < budget) {
    const std::size_t chunk = (failing.size() + n - 1) / n;
    bool reduced = false;
    for (std::size_t start = 0; start < failing.size(); start += chunk) {
      Trace candidate;
      candidate.insert(candidate.end(), failing.begin(), failing.begin() + static_cast<std::ptrdiff_t>(start));
      const std::size_t end = std::min(failing.size(), start + chunk);
      candidate.insert(candidate.end(), failing.begin() + static_cast<std::ptrdiff_t>(end), failing.end());
      if (test(candidate)) {
        failing = std::move(candidate);
        n = std::max<std::size_t>(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (reduced) continue;
    if (n >= failing.size()) break;
    n = std::min(failing.size(), n * 2);
  }

  // Simplify what is left: plain (not nested) ops, no faults, small references.
  for (bool changed = true; changed && runs < budget;) {
    changed = false;
    for (std::size_t i = 0; i < failing.size() && runs < budget; ++i) {
      const Op original = failing[i];
      std::vector<Op> tries;
      if (original.nested) {
        Op t = original;
        t.nested = false;
        tries.push_back(t);
      }
      if (original.f != 0) {
        Op t = original;
        t.f = 0;
        tries.push_back(t);
      }
      for (std::uint8_t Op::*field : {&Op::a, &Op::b, &Op::c, &Op::d}) {
        if (original.*field == 0) continue;
        Op t = original;
        t.*field = 0;
        tries.push_back(t);
      }
      for (const Op& t : tries) {
        Trace candidate = failing;
        candidate[i] = t;
        if (test(candidate)) {
          failing = std::move(candidate);
          changed = true;
          break;
        }
      }
    }
  }
  return failing;
}

}  // namespace dshpty::fuzz
