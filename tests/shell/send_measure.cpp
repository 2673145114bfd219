// Measures the time from start_send("true") to its stdin_read completion, over 100 sends.
// Run: meson test -C BUILD --benchmark --suite shell-bench --verbose
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

int main() {
  ShellFixture fx;
  auto s = fx.spawn();
  if (!s.session) {
    std::fprintf(stderr, "spawn failed: %s\n", describe(s.error).c_str());
    return 1;
  }
  std::vector<double> ms;
  int not_stdin_read = 0;
  for (int i = 0; i < 100; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = fx.send(*s.session, "true");
    double elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!r) {
      std::fprintf(stderr, "send failed: %s\n", describe(r.error()).c_str());
      return 1;
    }
    if (r->wait_reason != WaitReason::stdin_read) ++not_stdin_read;
    ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("send(\"true\") -> stdin_read over %zu sends: median %.3f ms, p10 %.3f, p90 %.3f, "
              "max %.3f (%d not stdin_read)\n",
              ms.size(), ms[ms.size() / 2], ms[ms.size() / 10], ms[ms.size() * 9 / 10], ms.back(),
              not_stdin_read);
  Status st = fx.close(*s.session);
  return st && not_stdin_read == 0 ? 0 : 1;
}
