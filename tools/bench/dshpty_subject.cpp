#include "dshpty_subject.hpp"

#include <memory>
#include <sstream>
#include <stdexcept>

#include "bash_profile.hpp"
#include "figures.hpp"
#include "harness.hpp"
#include "proc_stats.hpp"
#include "process.hpp"

namespace bench {

namespace {

std::string fixed(double v, int precision) {
  std::ostringstream s;
  s.precision(precision);
  s << std::fixed << v;
  return s.str();
}

void throughput(const Plan& plan, Report& report) {
  Harness h(plan);
  auto s = h.spawn();
  const std::string& id = s.session.id;
  Samples mbs;
  long rss0 = rss_kib();
  std::string reasons;
  for (int i = 0; i < plan.throughput_runs; ++i) {
    h.raw_bytes = h.raw_chunks = 0;
    auto t0 = Clock::now();
    auto r = h.send(id, flood_command(plan.flood_bytes), std::chrono::minutes(10));
    double secs = micros_since(t0) / 1e6;
    if (r.wait_reason != dshpty::WaitReason::stdin_read) {
      reasons += ' ';
      reasons += dshpty::wait_reason_name(r.wait_reason);
    }
    if (h.raw_bytes < plan.flood_bytes) {
      std::string tail = r.viewport.substr(r.viewport.size() > 60 ? r.viewport.size() - 60 : 0);
      for (char& c : tail)
        if (c == '\n' || c == '\t') c = ' ';
      throw std::runtime_error("the send completed as " +
                               std::string(dshpty::wait_reason_name(r.wait_reason)) +
                               " after " + std::to_string(h.raw_bytes) +
                               " bytes; viewport ends: " + tail);
    }
    mbs.add(static_cast<double>(h.raw_bytes) / secs / 1e6);
  }
  long growth = rss_kib() - rss0;
  auto page = h.service().read(h.owner(), id, {0, 1});
  std::string note = fixed(static_cast<double>(h.raw_bytes) / static_cast<double>(h.raw_chunks) /
                               1024.0, 2) +
                     " KiB per read; host RSS +" + fixed(growth / 1024.0, 1) + " MiB";
  if (page) note += "; scrollback " + std::to_string(page->total_lines) + " lines kept";
  if (!reasons.empty()) note += "; completed as" + reasons;
  report.measured(kFig1, kDshpty, kMBps, mbs, note);
}

// One bare spawn (posix_spawn of bash on a PTY, no helper) to its first prompt, in ms.
double bare_spawn_ms() {
  auto t0 = Clock::now();
  PtyChild child(bash_argv(), bash_env(), kRows, kCols);
  std::string tail;
  if (!child.read_until_prompt(tail, std::chrono::seconds(10))) throw std::runtime_error("bare: no first prompt");
  return micros_since(t0) / 1000.0;
}

// The same with dshpty's shell integration as bash's rcfile: what the marks cost the start.
double marked_spawn_ms(const MarkedBash& marks) {
  auto t0 = Clock::now();
  PtyChild child(marks.argv(), marks.env(), kRows, kCols);
  std::string tail;
  if (!child.read_until(tail, std::chrono::seconds(10), MarkedBash::at_prompt))
    throw std::runtime_error("bare with marks: no first prompt");
  return micros_since(t0) / 1000.0;
}

// The bare spawn (the limit), the unsandboxed and the sandboxed (read-only, network off:
// bwrap's pid, mount and net namespaces) spawns alternate, so all see the same machine
// from moment to moment: "within 1 ms of bare" compares figures taken side by side. A
// sandbox that cannot be built here skips its row with the reason; the others stand.
void spawns(const Plan& plan, Report& report) {
  Harness h(plan);
  std::unique_ptr<Harness> hs;
  std::string sandbox_error;
  try {
    hs = std::make_unique<Harness>(plan, [](dshpty::ShellConfig& c) {
      c.sandbox = dshpty::SandboxMode::read_only;
    });
  } catch (const std::exception& e) {
    sandbox_error = e.what();
  }
  Samples ms, close_ms, sandboxed_ms, sandboxed_close_ms, bare_ms, marked_ms, helper_us;
  std::string bare_error, marked_error;
  const MarkedBash marks;
  for (int i = 0; i < plan.spawns; ++i) {
    if (bare_error.empty()) {
      try {
        bare_ms.add(bare_spawn_ms());
      } catch (const std::exception& e) {
        bare_error = e.what();
      }
    }
    if (marked_error.empty()) {
      try {
        marked_ms.add(marked_spawn_ms(marks));
      } catch (const std::exception& e) {
        marked_error = e.what();
      }
    }
    auto t0 = Clock::now();
    auto s = h.spawn();
    ms.add(micros_since(t0) / 1000.0);
    // The helper's CPU from its exec to the shell's first prompt (its parent's work
    // before the exec not included).
    if (s.session.pid) helper_us.add(cpu_ns(parent_of(*s.session.pid)) / 1000.0);
    auto t1 = Clock::now();
    h.close(s.session.id);
    close_ms.add(micros_since(t1) / 1000.0);
    if (!hs) continue;
    try {
      auto t2 = Clock::now();
      auto c = hs->spawn();
      sandboxed_ms.add(micros_since(t2) / 1000.0);
      auto t3 = Clock::now();
      hs->close(c.session.id);
      sandboxed_close_ms.add(micros_since(t3) / 1000.0);
    } catch (const std::exception& e) {
      sandbox_error = e.what();
      hs.reset();
    }
  }
  if (bare_error.empty()) {
    report.measured(kFig3, kBare, kMs, bare_ms, "posix_spawn, no helper; alternating with dshpty's");
  } else {
    report.skipped(kFig3, kBare, kMs, "error: " + bare_error);
  }
  if (marked_error.empty()) {
    report.measured(kFig3, kBareMarked, kMs, marked_ms,
                    "posix_spawn, no helper; bash with dshpty's integration as its rcfile");
  } else {
    report.skipped(kFig3, kBareMarked, kMs, "error: " + marked_error);
  }
  report.measured(kFig3, kDshpty, kMs, ms,
                  "helper + shell" +
                      (marked_error.empty() ? "; " + fixed(ms.median() - marked_ms.median(), 2) +
                                                  " ms over the bare spawn with dshpty's marks"
                                            : std::string()) +
                      "; the helper's CPU to the first prompt: median " + fixed(helper_us.median(), 0) +
                      " us; close after it: median " + fixed(close_ms.median(), 2) + " ms");
  if (sandbox_error.empty()) {
    report.measured(kFig3, kDshptySandbox, kMs, sandboxed_ms,
                    "bwrap + helper + shell, read-only, network off; close after it: median " +
                        fixed(sandboxed_close_ms.median(), 2) + " ms");
  } else {
    report.skipped(kFig3, kDshptySandbox, kMs, "error: " + sandbox_error);
  }
}

template <class Fn>
void guarded(Report& report, const char* fig, const char* metric, Fn fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    report.skipped(fig, kDshpty, metric, std::string("error: ") + e.what());
  }
}

}  // namespace

void measure_dshpty(const Plan& plan, Report& report) {
  if (plan.wants(1)) guarded(report, kFig1, kMBps, [&] { throughput(plan, report); });
  // Figure 2 is send_figure.cpp's: dshpty and the bare loop side by side.
  if (plan.wants(3)) guarded(report, kFig3, kMs, [&] { spawns(plan, report); });
}

}  // namespace bench
