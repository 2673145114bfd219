// Figure 5: N sessions on one loop. Opened with a bounded number of spawns in flight, then
// measured at rest (host RSS per session, each supervisor's RSS), left idle (host CPU time,
// loop iterations and the helpers' CPU and context switches: the goal is none), then all
// closed at once to quiescence.
#include <ev.h>
#include <sys/resource.h>

#include <optional>
#include <stdexcept>
#include <vector>

#include "dshpty_subject.hpp"
#include "figures.hpp"
#include "harness.hpp"
#include "process.hpp"
#include "proc_stats.hpp"

namespace bench {

namespace {

Samples one(double v) {
  Samples s;
  s.add(v);
  return s;
}

double self_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

long self_switches() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_nvcsw + ru.ru_nivcsw;
}

struct Session {
  std::string id;
  pid_t shell = 0;
  pid_t supervisor = 0;
};

}  // namespace

void measure_scale(const Plan& plan, Report& report) {
  if (!plan.wants(5)) return;
  const int n = plan.sessions;
  const std::string fig = kFig5;
  try {
    unsigned long fds = raise_fd_limit();
    Harness h(plan, [](dshpty::ShellConfig& c) { c.startup_timeout = std::chrono::minutes(2); });
    struct ev_loop* loop = h.loop();

    // --- open ---
    long rss0 = rss_kib();
    std::vector<Session> sessions;
    Samples latency_ms;
    int launched = 0, landed = 0;
    std::optional<std::string> failure;
    std::function<void()> launch = [&] {
      ++launched;
      auto t0 = Clock::now();
      h.spawn_async([&, t0](dshpty::Result<dshpty::SpawnResult> r) {
        ++landed;
        latency_ms.add(micros_since(t0) / 1000.0);
        if (!r) {
          if (!failure) failure = dshpty::describe(r.error());
        } else {
          pid_t shell = r->session.pid.value_or(0);
          sessions.push_back({r->session.id, shell, parent_of(shell)});
        }
        if (launched < n && !failure) launch();
      });
    };
    auto t_open = Clock::now();
    for (int i = 0; i < std::min(n, plan.open_parallel); ++i) launch();
    h.run_until([&] { return landed == launched && (launched == n || failure); },
                std::chrono::minutes(10));
    double open_ms = micros_since(t_open) / 1000.0;
    if (failure)
      throw std::runtime_error("spawn " + std::to_string(landed) + " failed: " + *failure);
    long rss1 = rss_kib();

    report.measured(fig, kDshpty, "open all, ms", one(open_ms),
                    std::to_string(n) + " sessions, " + std::to_string(plan.open_parallel) +
                        " spawns in flight; RLIMIT_NOFILE " + std::to_string(fds));
    report.measured(fig, kDshpty, "open one under load, ms", latency_ms);
    report.measured(fig, kDshpty, "host growth KiB/session",
                    one(static_cast<double>(rss1 - rss0) / n),
                    "VmRSS " + std::to_string(rss0) + " -> " + std::to_string(rss1) + " KiB");
    Samples sup_rss, sup_pss, sup_private;
    for (const Session& s : sessions) {
      sup_rss.add(static_cast<double>(rss_kib(s.supervisor)));
      sup_pss.add(static_cast<double>(pss_kib(s.supervisor)));
      sup_private.add(static_cast<double>(private_kib(s.supervisor)));
    }
    // VmRSS counts the shared libraries' pages in every helper; PSS and private say what
    // one more helper really costs.
    report.measured(fig, kDshpty, "supervisor RSS KiB", sup_rss,
                    "VmRSS; PSS median " + std::to_string(static_cast<long>(sup_pss.median())) +
                        ", private " + std::to_string(static_cast<long>(sup_private.median())) +
                        " KiB");

    // --- idle ---
    auto helpers_cpu = [&] {
      double t = 0;
      for (const Session& s : sessions) t += cpu_seconds(s.supervisor);
      return t;
    };
    auto helpers_switches = [&] {
      long c = 0;
      for (const Session& s : sessions) c += context_switches(s.supervisor);
      return c;
    };
    // The helpers are read through /proc before and after the host's own counters, so the
    // host's idle figures hold none of the bench's reading.
    double hcpu0 = helpers_cpu();
    long hsw0 = helpers_switches();
    double cpu0 = self_cpu_seconds();
    long sw0 = self_switches();
    unsigned it0 = ev_iteration(loop);
    ev_timer idle;
    ev_timer_init(&idle, [](struct ev_loop* l, ev_timer*, int) { ev_break(l, EVBREAK_ONE); },
                  plan.idle_seconds, 0.0);
    ev_timer_start(loop, &idle);
    ev_run(loop, 0);
    ev_timer_stop(loop, &idle);
    // The idle timer's own expiry is one iteration and one switch: not the library's.
    long wakeups = static_cast<long>(ev_iteration(loop) - it0) - 1;
    long switches = self_switches() - sw0 - 1;
    double idle_cpu_ms = (self_cpu_seconds() - cpu0) * 1000.0;
    double hcpu_ms = (helpers_cpu() - hcpu0) * 1000.0;
    long hsw = helpers_switches() - hsw0;
    std::string idle_note = std::to_string(static_cast<int>(plan.idle_seconds)) + " s idle";
    report.measured(fig, kDshpty, "host CPU ms while idle", one(idle_cpu_ms), idle_note);
    report.measured(fig, kDshpty, "host loop wakeups while idle", one(static_cast<double>(wakeups)),
                    idle_note + "; context switches " + std::to_string(switches));
    report.measured(fig, kDshpty, "helpers' CPU ms while idle", one(hcpu_ms),
                    "all " + std::to_string(n) + " helpers; context switches " +
                        std::to_string(hsw));

    // --- close all ---
    int closed = 0;
    std::optional<std::string> close_failure;
    auto t_close = Clock::now();
    for (const Session& s : sessions)
      h.close_async(s.id, [&](dshpty::Result<bool> r) {
        ++closed;
        if (!r && !close_failure) close_failure = dshpty::describe(r.error());
      });
    h.run_until([&] { return closed == static_cast<int>(sessions.size()); },
                std::chrono::minutes(5));
    double close_ms = micros_since(t_close) / 1000.0;
    std::size_t left = 0;
    for (const Session& s : sessions) left += (alive(s.shell) ? 1 : 0) + (alive(s.supervisor) ? 1 : 0);
    std::string close_note = close_failure ? "FAILED: " + *close_failure
                             : left        ? std::to_string(left) + " processes LEFT BEHIND"
                                           : "verified: every shell and helper gone";
    report.measured(fig, kDshpty, "close all, ms", one(close_ms), close_note);
  } catch (const std::exception& e) {
    report.skipped(fig, kDshpty, "open all, ms", std::string("error: ") + e.what());
  }
}

}  // namespace bench
