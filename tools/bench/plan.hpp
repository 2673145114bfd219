// How much of each figure one run measures (full or --quick), and where the peers live.
#pragma once

#include <string>
#include <vector>

namespace bench {

struct Plan {
  bool quick = false;
  unsigned long long flood_bytes = 256ull << 20;
  int throughput_runs = 3;
  int round_trips = 200;
  int spawns = 30;
  std::vector<int> tree_sizes{1, 10, 1000};
  int kill_runs = 5;       // per tree size (1,000-process trees: 2)
  int hostile_tree = 10;   // figure 4: a tree ignoring HUP/TERM, closed with no grace
  int storm = 520;         // figure 4: closed once this many are up, forking on (4x as many)
  int sessions = 1000;     // figure 5
  int open_parallel = 32;  // spawns in flight while opening them
  double idle_seconds = 10;

  std::string python = "python3";
  std::string node = "node";
  std::string node_modules;  // holds node-pty; empty: node's own resolution
  std::string peers_dir;     // pexpect_peer.py, node_pty_peer.js
  std::string supervisor;    // dshpty-supervisor; empty: $DSHPTY_SUPERVISOR
  std::vector<std::string> only;  // figure numbers to run; empty: all

  bool wants(int figure) const;
  static Plan quick_plan();
};

}  // namespace bench
