#include "plan.hpp"

#include <algorithm>

namespace bench {

bool Plan::wants(int figure) const {
  return only.empty() || std::find(only.begin(), only.end(), std::to_string(figure)) != only.end();
}

Plan Plan::quick_plan() {
  Plan p;
  p.quick = true;
  p.flood_bytes = 16ull << 20;
  p.throughput_runs = 1;
  p.round_trips = 20;
  p.spawns = 5;
  p.tree_sizes = {1, 10, 100};
  p.kill_runs = 2;
  p.storm = 100;
  p.sessions = 20;
  p.open_parallel = 8;
  p.idle_seconds = 1;
  return p;
}

}  // namespace bench
