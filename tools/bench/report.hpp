// The bench's findings: rows of measured figures (or skipped subjects, with the reason),
// target verdicts, and the machine they were taken on; printed as a table or as JSON.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "stats.hpp"

namespace bench {

struct Row {
  std::string figure;   // "1 throughput", ...
  std::string subject;  // "dshpty", "bare PTY (limit)", "pexpect", ...
  std::string metric;   // what was measured, with the unit: "MB/s", "us", "ms", "KiB"
  std::optional<double> median;
  std::optional<double> p99;
  std::size_t n = 0;
  std::optional<double> ratio;  // median / the figure's reference median
  std::string note;             // skipped: why; otherwise extra facts
  std::vector<double> raw;      // every sample, in the order taken (printed by --json)
  bool skipped = false;
};

struct Verdict {
  std::string target;  // the target in words: "send p50 below node-pty's"
  std::string measured;
  std::optional<bool> met;  // nullopt: could not be decided (a subject was skipped)
};

struct Report {
  std::string machine;  // nproc, CPU, kernel, load
  std::string mode;     // "full" or "quick"
  std::vector<Row> rows;
  std::vector<Verdict> verdicts;

  Row& add(Row row);
  Row& measured(std::string figure, std::string subject, std::string metric,
                const Samples& s, std::string note = {});
  Row& skipped(std::string figure, std::string subject, std::string metric, std::string why);
  // The measured row of `figure` whose subject is `subject`, if any.
  const Row* find(const std::string& figure, const std::string& subject,
                  const std::string& metric) const;
  // Fills each row's ratio against `subject` of the same figure and metric.
  void ratios_against(const std::string& figure, const std::string& subject);

  void print_table(std::ostream& out) const;
  void print_json(std::ostream& out) const;
};

std::string describe_machine();

}  // namespace bench
