#include "verdicts.hpp"

#include <optional>
#include <sstream>

#include "figures.hpp"

namespace bench {

namespace {

// How a figure is held against its target.
enum class Rule {
  times_at_least,  // value >= target x the other subject's
  times_at_most,   // value <= target x the other subject's
  plus_at_most,    // value - the other subject's <= target
  below,           // value < target, or < the other subject's when there is one
  at_most,         // value <= target
};

enum class Stat { median, p99 };

struct Target {
  const char* words;    // the target as the verdict table prints it
  const char* figure;
  const char* metric;   // the row's metric, as the figure reports it
  Stat stat;
  const char* unit;     // printed after the numbers
  int precision;        // digits after the point
  Rule rule;
  double target;        // unused by `below` with a subject
  const char* against;  // the subject compared with; nullptr: the target is absolute
  // Stands in when `against` was not measured in this run (a peer not installed).
  std::optional<double> reference;
  const char* also_metric;  // printed beside the value, not judged; nullptr: none
  const char* also_unit;
  const char* why;  // where the target comes from
};

// Every target of the bench, in the order the verdict table prints them.
const Target kTargets[] = {
    {"throughput >= 0.9x the bare loop", kFig1, kMBps, Stat::median, "MB/s", 1,
     Rule::times_at_least, 0.9, kBare, std::nullopt, nullptr, nullptr,
     "sanitizing and keeping the scrollback may cost at most a tenth of the rate a bare "
     "PTY loop reads at"},
    {"send p50 <= 1.2x the bare loop's, both on one CPU", kFig2, "us, one CPU", Stat::median,
     "us", 0, Rule::times_at_most, 1.2, kBare, std::nullopt, nullptr, nullptr,
     "readiness (marks, foreground check) may add at most a fifth of a bare write-and-read-"
     "the-prompt round trip; judged within one wake mode (send_figure.cpp: the sends "
     "alternate, each is classed by where the shell ran), undecided with fewer than 20 "
     "samples of the mode"},
    {"send p50 <= 1.2x the bare loop's, across two CPUs", kFig2, "us, two CPUs", Stat::median,
     "us", 0, Rule::times_at_most, 1.2, kBare, std::nullopt, nullptr, nullptr,
     "the same target when the shell ran on the other CPU (each hop a cross-CPU wake-up)"},
    {"send p99 <= 2x the bare loop's", kFig2, kUs, Stat::p99, "us", 0, Rule::times_at_most, 2,
     kBare, std::nullopt, nullptr, nullptr,
     "the tail: no timer, no extra process hop may stretch a send beyond twice the bare "
     "loop's own tail in the same run"},
    {"spawn-to-prompt within 1 ms of bare posix_spawn", kFig3, kMs, Stat::median, "ms", 2,
     Rule::plus_at_most, 1.0, kBare, std::nullopt, nullptr, nullptr,
     "exec'ing the per-session helper that makes a close provable may cost at most 1 ms"},
    {"spawn-to-prompt below node-pty's", kFig3, kMs, Stat::median, "ms", 2, Rule::below, 0,
     kNodePty, 3.3, nullptr, nullptr,
     "node-pty, the peer a host would pick instead; 3.3 ms is the node-pty figure the "
     "targets were set with, used when node-pty is not installed"},
    {"kill of a 10-process tree under 5 ms", kFig4, "ms, tree of 10", Stat::median, "ms", 2,
     Rule::below, 5, nullptr, std::nullopt, nullptr, nullptr,
     "a fixed budget: proving a typical tree gone should cost a few milliseconds"},
    {"host growth under 16 KiB per session", kFig5, "host growth KiB/session", Stat::median,
     "KiB", 1, Rule::below, 16, nullptr, std::nullopt, nullptr, nullptr,
     "a fixed budget: 1,000 sessions under 16 MiB of host memory (node-pty: about 41 KiB "
     "and a thread each)"},
    {"supervisor under 512 KiB RSS", kFig5, "supervisor RSS KiB", Stat::median, "KiB", 0,
     Rule::below, 512, nullptr, std::nullopt, nullptr, nullptr,
     "a fixed budget for the helper every session runs beside its shell"},
    {"zero idle wakeups", kFig5, "host loop wakeups while idle", Stat::median,
     "loop wakeups", 0, Rule::at_most, 0, nullptr, std::nullopt, "host CPU ms while idle",
     "ms CPU", "an idle session costs its host nothing: no timer or poll runs while it waits"},
};

std::string fmt(double v, int precision) {
  std::ostringstream s;
  s.precision(precision);
  s << std::fixed << v;
  return s.str();
}

std::optional<double> stat_of(const Report& report, const char* figure, const char* subject,
                              const char* metric, Stat stat) {
  const Row* row = report.find(figure, subject, metric);
  if (!row) return std::nullopt;
  return stat == Stat::p99 ? row->p99 : row->median;
}

Verdict judge(const Report& report, const Target& t) {
  Verdict v{t.words, "-", std::nullopt};
  auto value = stat_of(report, t.figure, kDshpty, t.metric, t.stat);
  if (!value) return v;
  const double d = *value;
  std::string measured = fmt(d, t.precision);
  double limit = t.target;
  if (t.against) {
    auto other = stat_of(report, t.figure, t.against, t.metric, t.stat);
    const char* source = "measured";
    if (!other) {
      if (!t.reference) return v;
      other = t.reference;
      source = "reference";
    }
    const double o = *other;
    measured += " vs " + fmt(o, t.precision) + " " + t.unit;
    switch (t.rule) {
      case Rule::times_at_least:
      case Rule::times_at_most:
        measured += " = " + fmt(d / o, 2) + "x";
        limit = t.target * o;
        break;
      case Rule::plus_at_most:
        measured += " (+" + fmt(d - o, 2) + ")";
        limit = t.target + o;
        break;
      case Rule::below:
      case Rule::at_most:
        limit = o;
        break;
    }
    if (t.reference) measured += std::string(" (") + source + ")";
  } else {
    measured += std::string(" ") + t.unit;
  }
  if (t.also_metric)
    if (auto also = stat_of(report, t.figure, kDshpty, t.also_metric, Stat::median))
      measured += ", " + fmt(*also, 1) + " " + t.also_unit;
  v.measured = measured;
  switch (t.rule) {
    case Rule::times_at_least: v.met = d >= limit; break;
    case Rule::times_at_most:
    case Rule::plus_at_most:
    case Rule::at_most: v.met = d <= limit; break;
    case Rule::below: v.met = d < limit; break;
  }
  return v;
}

}  // namespace

void judge_targets(Report& report) {
  for (const Target& t : kTargets) report.verdicts.push_back(judge(report, t));
}

}  // namespace bench
