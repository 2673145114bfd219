#include "verdicts.hpp"

#include <sstream>

#include "figures.hpp"

namespace bench {

namespace {

std::string fmt(double v, int precision = 2) {
  std::ostringstream s;
  s.precision(precision);
  s << std::fixed << v;
  return s.str();
}

struct Ref {
  double value;
  std::string source;  // "measured" or "issue reference"
};

// A measured value of a row, or the reference number when that row was skipped.
std::optional<Ref> value_or_reference(const Report& r, const char* fig, const char* subject,
                                      const char* metric, bool p99, std::optional<double> ref) {
  if (const Row* row = r.find(fig, subject, metric)) {
    auto v = p99 ? row->p99 : row->median;
    if (v) return Ref{*v, "measured"};
  }
  if (ref) return Ref{*ref, "issue reference"};
  return std::nullopt;
}

}  // namespace

void judge_targets(Report& report) {
  auto& v = report.verdicts;
  auto median = [&](const char* fig, const char* subject, const char* metric) -> std::optional<double> {
    const Row* row = report.find(fig, subject, metric);
    return row ? row->median : std::nullopt;
  };
  auto p99 = [&](const char* fig, const char* subject, const char* metric) -> std::optional<double> {
    const Row* row = report.find(fig, subject, metric);
    return row ? row->p99 : std::nullopt;
  };

  {
    auto d = median(kFig1, kDshpty, kMBps), b = median(kFig1, kBare, kMBps);
    Verdict t{"throughput >= 0.9x the bare loop", "-", std::nullopt};
    if (d && b) {
      t.measured = fmt(*d, 1) + " vs " + fmt(*b, 1) + " MB/s = " + fmt(*d / *b) + "x";
      t.met = *d >= 0.9 * *b;
    }
    v.push_back(t);
  }
  {
    auto d = median(kFig2, kDshpty, kUs), b = median(kFig2, kBare, kUs);
    Verdict t{"send p50 <= 1.5x the bare loop's", "-", std::nullopt};
    if (d && b) {
      t.measured = fmt(*d, 0) + " vs " + fmt(*b, 0) + " us = " + fmt(*d / *b) + "x";
      t.met = *d <= 1.5 * *b;
    }
    v.push_back(t);
    auto n = value_or_reference(report, kFig2, kNodePty, kUs, false, 162);
    Verdict u{"send p50 below node-pty's", "-", std::nullopt};
    if (d && n) {
      u.measured = fmt(*d, 0) + " vs " + fmt(n->value, 0) + " us (" + n->source + ")";
      u.met = *d < n->value;
    }
    v.push_back(u);
    auto dp = p99(kFig2, kDshpty, kUs);
    auto np = value_or_reference(report, kFig2, kNodePty, kUs, true, 908);
    Verdict w{"send p99 below node-pty's", "-", std::nullopt};
    if (dp && np) {
      w.measured = fmt(*dp, 0) + " vs " + fmt(np->value, 0) + " us (" + np->source + ")";
      w.met = *dp < np->value;
    }
    v.push_back(w);
  }
  {
    auto d = median(kFig3, kDshpty, kMs), b = median(kFig3, kBare, kMs);
    Verdict t{"spawn-to-prompt within 1.5 ms of bare posix_spawn", "-", std::nullopt};
    if (d && b) {
      t.measured = fmt(*d) + " vs " + fmt(*b) + " ms (+" + fmt(*d - *b) + ")";
      t.met = *d - *b <= 1.5;
    }
    v.push_back(t);
    auto n = value_or_reference(report, kFig3, kNodePty, kMs, false, 3.3);
    Verdict u{"spawn-to-prompt below node-pty's", "-", std::nullopt};
    if (d && n) {
      u.measured = fmt(*d) + " vs " + fmt(n->value) + " ms (" + n->source + ")";
      u.met = *d < n->value;
    }
    v.push_back(u);
  }
  {
    auto d = median(kFig4, kDshpty, "ms, tree of 10");
    Verdict t{"kill of a 10-process tree under 5 ms", "-", std::nullopt};
    if (d) {
      t.measured = fmt(*d) + " ms";
      t.met = *d < 5;
    }
    v.push_back(t);
  }
  {
    auto g = median(kFig5, kDshpty, "host growth KiB/session");
    Verdict t{"host growth under 16 KiB per session", "-", std::nullopt};
    if (g) {
      t.measured = fmt(*g, 1) + " KiB";
      t.met = *g < 16;
    }
    v.push_back(t);
    auto s = median(kFig5, kDshpty, "supervisor RSS KiB");
    Verdict u{"supervisor under 512 KiB RSS", "-", std::nullopt};
    if (s) {
      u.measured = fmt(*s, 0) + " KiB";
      u.met = *s < 512;
    }
    v.push_back(u);
    auto w = median(kFig5, kDshpty, "host loop wakeups while idle");
    auto c = median(kFig5, kDshpty, "host CPU ms while idle");
    Verdict x{"zero idle wakeups", "-", std::nullopt};
    if (w) {
      x.measured = fmt(*w, 0) + " loop wakeups" + (c ? ", " + fmt(*c, 1) + " ms CPU" : "");
      x.met = *w == 0;
    }
    v.push_back(x);
  }
}

}  // namespace bench
