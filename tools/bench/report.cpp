#include "report.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace bench {

Row& Report::add(Row row) {
  rows.push_back(std::move(row));
  return rows.back();
}

Row& Report::measured(std::string figure, std::string subject, std::string metric,
                      const Samples& s, std::string note) {
  Row r;
  r.figure = std::move(figure);
  r.subject = std::move(subject);
  r.metric = std::move(metric);
  r.n = s.size();
  r.raw = s.values;
  if (!s.empty()) {
    r.median = s.median();
    if (s.size() >= 10) r.p99 = s.p99();
  }
  r.note = std::move(note);
  return add(std::move(r));
}

Row& Report::skipped(std::string figure, std::string subject, std::string metric,
                     std::string why) {
  Row r;
  r.figure = std::move(figure);
  r.subject = std::move(subject);
  r.metric = std::move(metric);
  r.note = std::move(why);
  r.skipped = true;
  return add(std::move(r));
}

const Row* Report::find(const std::string& figure, const std::string& subject,
                        const std::string& metric) const {
  for (const Row& r : rows)
    if (!r.skipped && r.figure == figure && r.subject == subject && r.metric == metric) return &r;
  return nullptr;
}

void Report::ratios_against(const std::string& figure, const std::string& subject) {
  for (Row& r : rows) {
    if (r.figure != figure || r.skipped || !r.median) continue;
    const Row* ref = find(figure, subject, r.metric);
    if (ref && ref->median && *ref->median != 0) r.ratio = *r.median / *ref->median;
  }
}

static std::string number(std::optional<double> v, int precision = 1) {
  if (!v || std::isnan(*v)) return "-";
  std::ostringstream s;
  double a = std::fabs(*v);
  s << std::fixed << std::setprecision(a >= 1000 ? 0 : a >= 10 ? precision : precision + 1) << *v;
  return s.str();
}

void Report::print_table(std::ostream& out) const {
  out << "dshpty-bench (" << mode << ")\n" << machine << "\n\n";
  out << "| figure | subject | metric | median | p99 | ratio | n | note |\n";
  out << "|---|---|---|---:|---:|---:|---:|---|\n";
  for (const Row& r : rows) {
    out << "| " << r.figure << " | " << r.subject << " | " << r.metric << " | ";
    if (r.skipped) {
      out << "skipped | | | | " << r.note << " |\n";
      continue;
    }
    out << number(r.median) << " | " << number(r.p99) << " | "
        << (r.ratio ? number(r.ratio, 1) + "x" : "") << " | " << r.n << " | " << r.note << " |\n";
  }
  if (!verdicts.empty()) {
    out << "\n| target | measured | verdict |\n|---|---|---|\n";
    for (const Verdict& v : verdicts)
      out << "| " << v.target << " | " << v.measured << " | "
          << (!v.met ? "undecided" : *v.met ? "met" : "MISSED") << " |\n";
  }
}

static std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

static std::string json_number(std::optional<double> v) {
  if (!v || std::isnan(*v) || std::isinf(*v)) return "null";
  std::ostringstream s;
  s << std::setprecision(6) << *v;
  return s.str();
}

void Report::print_json(std::ostream& out) const {
  out << "{\"mode\":" << json_string(mode) << ",\"machine\":" << json_string(machine)
      << ",\"rows\":[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out << (i ? "," : "") << "\n {\"figure\":" << json_string(r.figure)
        << ",\"subject\":" << json_string(r.subject) << ",\"metric\":" << json_string(r.metric)
        << ",\"skipped\":" << (r.skipped ? "true" : "false")
        << ",\"median\":" << json_number(r.median) << ",\"p99\":" << json_number(r.p99)
        << ",\"ratio\":" << json_number(r.ratio) << ",\"n\":" << r.n
        << ",\"note\":" << json_string(r.note) << ",\"raw\":[";
    for (std::size_t k = 0; k < r.raw.size(); ++k) out << (k ? "," : "") << json_number(r.raw[k]);
    out << "]}";
  }
  out << "],\n\"targets\":[";
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const Verdict& v = verdicts[i];
    out << (i ? "," : "") << "\n {\"target\":" << json_string(v.target)
        << ",\"measured\":" << json_string(v.measured) << ",\"met\":"
        << (!v.met ? "null" : *v.met ? "true" : "false") << "}";
  }
  out << "]}\n";
}

std::string describe_machine() {
  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) cpu = line.substr(colon + 2);
      break;
    }
  }
  utsname u{};
  uname(&u);
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  std::ostringstream s;
  s << "machine: " << sysconf(_SC_NPROCESSORS_ONLN) << " CPUs, " << cpu << ", " << u.sysname
    << " " << u.release << " " << u.machine << ", load " << std::fixed << std::setprecision(2)
    << load[0] << " " << load[1] << " " << load[2] << " at start";
  return s.str();
}

}  // namespace bench
