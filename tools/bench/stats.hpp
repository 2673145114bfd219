// Samples and their order statistics (nearest-rank percentiles, no interpolation).
#pragma once

#include <chrono>
#include <vector>

namespace bench {

struct Samples {
  std::vector<double> values;

  void add(double v) { values.push_back(v); }
  bool empty() const noexcept { return values.empty(); }
  std::size_t size() const noexcept { return values.size(); }
  // p in [0, 100]; NaN when empty.
  double percentile(double p) const;
  double median() const { return percentile(50); }
  double p99() const { return percentile(99); }
};

using Clock = std::chrono::steady_clock;

inline double micros_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

}  // namespace bench
