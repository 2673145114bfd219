// Measures kill-to-quiescence: from close() to its completion (helper reported quiescent,
// its pidfd readable, master drained to EIO) for a 10-process tree and a 500+ storm.
// Run: meson test -C BUILD --benchmark --suite shell-bench --verbose
#include <ev.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

struct Case {
  const char* name;
  const char* command;
  std::size_t processes;  // wait for at least this many marked processes
  std::chrono::milliseconds grace;
};

double measure(const Case& c) {
  ShellFixture fx;
  auto config = fx.config();
  config.close_grace = c.grace;
  auto s = fx.spawn(config);
  if (!s.session) {
    std::fprintf(stderr, "spawn failed: %s\n", describe(s.error).c_str());
    return -1;
  }
  fx.type(*s.session, c.command);
  if (!run_until(fx.loop(), [&] { return marked_processes(fx.marker()).size() >= c.processes; },
                 60s)) {
    std::fprintf(stderr, "%s: tree never reached %zu processes\n", c.name, c.processes);
    return -1;
  }
  std::size_t live = marked_processes(fx.marker()).size();
  auto t0 = std::chrono::steady_clock::now();
  Status st = fx.close(*s.session, 60s);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::size_t left = marked_processes(fx.marker()).size();
  if (!st || left != 0) {
    std::fprintf(stderr, "%s: close failed or %zu left\n", c.name, left);
    return -1;
  }
  std::printf("  %-44s %5zu processes  %8.2f ms\n", c.name, live, ms);
  return ms;
}

}  // namespace

int main() {
  // The marked processes include the helper and the shell.
  const Case cases[] = {
      {"10-process tree (HUP/TERM suffice)", "for i in $(seq 8); do sleep 300 & done", 10, 500ms},
      {"10-process tree ignoring HUP/TERM, grace 0",
       "for i in $(seq 8); do bash -c \"trap '' HUP TERM; exec sleep 300\" & done", 10, 0ms},
      {"520-process storm (HUP/TERM suffice)", "for i in $(seq 520); do sleep 300 & done", 522,
       500ms},
      {"520+ storm ignoring HUP/TERM, still forking, grace 0",
       "(trap '' HUP TERM; for i in $(seq 2000); do sleep 300 & done; wait) >/dev/null 2>&1 &",
       522, 0ms},
  };
  int failed = 0;
  std::printf("kill-to-quiescence (close() to completion), median of 5:\n");
  for (const Case& c : cases) {
    std::vector<double> runs;
    for (int i = 0; i < 5; ++i) {
      double ms = measure(c);
      if (ms < 0) {
        ++failed;
        break;
      }
      runs.push_back(ms);
    }
    if (runs.empty()) continue;
    std::sort(runs.begin(), runs.end());
    std::printf("=> %-44s median %8.2f ms (min %.2f, max %.2f)\n", c.name, runs[runs.size() / 2],
                runs.front(), runs.back());
  }
  return failed == 0 ? 0 : 1;
}
