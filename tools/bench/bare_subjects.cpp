#include "bare_subjects.hpp"

#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <stdexcept>

#include "bash_profile.hpp"
#include "figures.hpp"
#include "process.hpp"

namespace bench {

namespace {

struct Flood {
  double mb_per_s = 0;
  double bytes_per_read = 0;
};

Flood flood(unsigned long long bytes) {
  auto t0 = Clock::now();
  PtyChild child({"/bin/sh", "-c", flood_command(bytes)}, bash_env(), kRows, kCols);
  static char buf[1 << 16];
  unsigned long long total = 0, reads = 0;
  for (;;) {
    ssize_t n = read(child.master(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EIO: every writer of the slave is gone
    total += static_cast<unsigned long long>(n);
    ++reads;
  }
  double secs = micros_since(t0) / 1e6;
  child.wait();
  if (total < bytes) throw std::runtime_error("flood delivered " + std::to_string(total) + " bytes");
  return {static_cast<double>(total) / secs / 1e6,
          reads ? static_cast<double>(total) / static_cast<double>(reads) : 0};
}

}  // namespace

void measure_bare(const Plan& plan, Report& report) {
  const std::string who = kBare;
  if (plan.wants(1)) {
    try {
      Samples mbs, per_read;
      for (int i = 0; i < plan.throughput_runs; ++i) {
        Flood f = flood(plan.flood_bytes);
        mbs.add(f.mb_per_s);
        per_read.add(f.bytes_per_read / 1024.0);
      }
      std::ostringstream note;
      note.precision(2);
      note << std::fixed << per_read.median() << " KiB per read";
      report.measured(kFig1, who, kMBps, mbs, note.str());
    } catch (const std::exception& e) {
      report.skipped(kFig1, who, kMBps, std::string("error: ") + e.what());
    }
  }
  // Figures 2 and 3 are measured beside dshpty's own (send_figure.cpp, dshpty_subject.cpp):
  // the bare loop's rows come from there, taken side by side.
}

}  // namespace bench
