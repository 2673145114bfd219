#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace bench {

double Samples::percentile(double p) const {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

}  // namespace bench
