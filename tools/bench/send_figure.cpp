#include "send_figure.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <functional>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <stdexcept>

#include "bash_profile.hpp"
#include "figures.hpp"
#include "harness.hpp"
#include "proc_stats.hpp"
#include "process.hpp"
#include "wake_mode.hpp"

namespace bench {

namespace {

constexpr std::chrono::seconds kPromptLimit{10};
// A mode's row is reported only with this many samples: fewer say nothing about a median.
constexpr std::size_t kMinModeSamples = 20;

std::string fixed(double v, int precision);

// Nanoseconds of CPU: this thread's (the host's loop, or the bare loop's reads); a shell's
// is cpu_ns (its main thread's: a shell has one).
double thread_cpu_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

struct BySubject {
  Samples all;
  Samples one_cpu, two_cpus;
  std::size_t unknown = 0;
  // Where a round trip's CPU went, summed over the sends: the caller's thread and the shell.
  double host_ns = 0, shell_ns = 0;

  std::string cpu_per_send() const {
    const double n = static_cast<double>(all.size() ? all.size() : 1);
    return "CPU per send: host " + fixed(host_ns / n / 1000, 1) + " us, shell " + fixed(shell_ns / n / 1000, 1) + " us";
  }

  void add(double us, WakeMode mode) {
    all.add(us);
    if (mode == WakeMode::one_cpu) one_cpu.add(us);
    else if (mode == WakeMode::two_cpus) two_cpus.add(us);
    else ++unknown;
  }
};

// DSHPTY_BENCH_MARKS=1: each round trip is bracketed by a write to fd -1 ("B>" ... "<B" for
// the bare loop, "M>" ... "<M" for it with dshpty's marks, "D>" ... "<D" for dshpty), which
// fails at once but shows in a trace, so one send can be cut out of `strace -f -tt` or
// `perf trace` of a run.
const bool kMarks = [] {
  const char* v = std::getenv("DSHPTY_BENCH_MARKS");
  return v && *v && *v != '0';
}();

void mark(const char* two) {
  if (kMarks) (void)::syscall(SYS_write, -1, two, 2);
}

// Read before main() clears the environment (like kMarks). Without the per-round /proc
// reads (the wake mode, the shell's CPU), which would otherwise take most of the process's
// samples, `perf record` of a run sees the library's send path; the rows then say nothing.
const bool kProfile = [] {
  const char* v = std::getenv("DSHPTY_BENCH_PROFILE");
  return v && *v && *v != '0';
}();

std::string fixed(double v, int precision) {
  std::ostringstream s;
  s.precision(precision);
  s << std::fixed << v;
  return s.str();
}

std::string spread(const Samples& s) {
  return "p10 " + fixed(s.percentile(10), 0) + ", p90 " + fixed(s.percentile(90), 0) + ", max " +
         fixed(s.percentile(100), 0);
}

std::string modes(const BySubject& b) {
  return "one CPU " + std::to_string(b.one_cpu.size()) + ", two CPUs " +
         std::to_string(b.two_cpus.size()) +
         (b.unknown ? ", unknown " + std::to_string(b.unknown) : std::string());
}

void report_subject(Report& report, const char* subject, const BySubject& b,
                    const std::string& extra, const std::string& share) {
  report.measured(kFig2, subject, kUs, b.all,
                  spread(b.all) + "; wake modes: " + modes(b) + "; " + b.cpu_per_send() + "; " + share +
                      (extra.empty() ? "" : "; " + extra))
      .raw = b.all.values;
  for (auto [mode, samples] : {std::pair{WakeMode::one_cpu, &b.one_cpu},
                               std::pair{WakeMode::two_cpus, &b.two_cpus}}) {
    if (samples->size() < kMinModeSamples) continue;
    report.measured(kFig2, subject, send_metric(wake_mode_name(mode)), *samples, spread(*samples))
        .raw = samples->values;
  }
}

}  // namespace

bool profiling_sends() { return kProfile; }

std::string send_metric(const char* mode_name) { return std::string(kUs) + ", " + mode_name; }

void measure_send_side_by_side(const Plan& plan, Report& report) {
  BySubject bare, marked, dshpty;
  int other = 0;
  std::string error;
  CpuTimes before = CpuTimes::now();
  try {
    Harness h(plan);
    auto s = h.spawn();
    const pid_t dshpty_shell = s.session.pid.value_or(-1);
    PtyChild child(bash_argv(), bash_env(), kRows, kCols);
    std::string tail;
    if (!child.read_until_prompt(tail, kPromptLimit)) throw std::runtime_error("bare: no first prompt");
    // The same loop on a bash that prints dshpty's marks: the shell's share of the gap.
    MarkedBash marks;
    PtyChild marked_child(marks.argv(), marks.env(), kRows, kCols);
    if (!marked_child.read_until(tail, kPromptLimit, MarkedBash::at_prompt))
      throw std::runtime_error("bare with marks: no first prompt");
    // One bare round trip: `true`, then read to the prompt's end.
    const auto bare_round = [&](PtyChild& c, BySubject& into, const char* in, const char* out,
                                const std::function<bool(std::string_view)>& done) {
      tail.clear();
      const double host0 = thread_cpu_ns(), shell0 = cpu_ns(c.pid());
      mark(in);
      auto t0 = Clock::now();
      c.write_all("true\r");
      if (!c.read_until(tail, kPromptLimit, done)) throw std::runtime_error("bare: no prompt");
      double us = micros_since(t0);
      mark(out);
      into.host_ns += thread_cpu_ns() - host0;
      into.shell_ns += cpu_ns(c.pid()) - shell0;
      into.add(us, wake_mode_of(c.pid()));
    };
    for (int i = 0; i < plan.round_trips; ++i) {
      // Which goes first rotates too: none always follows another's wake-ups.
      for (int turn = 0; turn < 3; ++turn) {
        switch (kProfile ? 2 : (turn + i) % 3) {
          case 0:
            bare_round(child, bare, "B>", "<B", ends_at_prompt);
            break;
          case 1:
            bare_round(marked_child, marked, "M>", "<M", MarkedBash::at_prompt);
            break;
          default: {
            if (kProfile) {
              (void)h.send(s.session.id, "true");
              break;
            }
            const double host0 = thread_cpu_ns(), shell0 = cpu_ns(dshpty_shell);
            mark("D>");
            auto t0 = Clock::now();
            auto r = h.send(s.session.id, "true");
            double us = micros_since(t0);
            mark("<D");
            dshpty.host_ns += thread_cpu_ns() - host0;
            dshpty.shell_ns += cpu_ns(dshpty_shell) - shell0;
            dshpty.add(us, wake_mode_of(dshpty_shell));
            if (r.wait_reason != dshpty::WaitReason::stdin_read) ++other;
          }
        }
      }
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  const std::string share = describe_cpu_share(before, CpuTimes::now());
  if (!error.empty()) {
    report.skipped(kFig2, kBare, kUs, "error: " + error);
    report.skipped(kFig2, kBareMarked, kUs, "error: " + error);
    report.skipped(kFig2, kDshpty, kUs, "error: " + error);
    return;
  }
  report_subject(report, kBare, bare, "", share);
  report_subject(report, kBareMarked, marked,
                 "bash with dshpty's integration as its rcfile, read to the prompt's end mark", share);
  report_subject(report, kDshpty, dshpty,
                 fixed(dshpty.all.median() / marked.all.median(), 2) +
                     "x the bare loop with dshpty's marks; " +
                     (other ? std::to_string(other) + " sends did not complete as stdin_read"
                            : std::string("all completed as stdin_read")),
                 share);
}

}  // namespace bench
