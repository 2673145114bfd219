#include "fresh_process.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

namespace {

// One row a line, fields separated by TAB; notes and names never hold tabs or newlines.
std::string opt(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", *v);
  return buf;
}

std::optional<double> unopt(const std::string& s) {
  if (s == "-") return std::nullopt;
  return std::strtod(s.c_str(), nullptr);
}

std::string encode(const Row& r) {
  return r.figure + '\t' + r.subject + '\t' + r.metric + '\t' + opt(r.median) + '\t' +
         opt(r.p99) + '\t' + std::to_string(r.n) + '\t' + (r.skipped ? "1" : "0") + '\t' +
         r.note + '\n';
}

bool decode(const std::string& line, Row& r) {
  std::vector<std::string> f;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) f.push_back(field);
  if (f.size() < 7) return false;
  r.figure = f[0];
  r.subject = f[1];
  r.metric = f[2];
  r.median = unopt(f[3]);
  r.p99 = unopt(f[4]);
  r.n = std::strtoul(f[5].c_str(), nullptr, 10);
  r.skipped = f[6] == "1";
  r.note = f.size() > 7 ? f[7] : "";
  return true;
}

}  // namespace

void run_in_fresh_process(Report& report, const std::function<void(Report&)>& figure) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    figure(report);  // no pipe: measure here rather than not at all
    return;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Report mine;
    figure(mine);
    std::string out;
    for (const Row& r : mine.rows) out += encode(r);
    for (std::size_t off = 0; off < out.size();) {
      ssize_t n = write(fds[1], out.data() + off, out.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string in;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  if (pid > 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  std::istringstream lines(in);
  for (std::string line; std::getline(lines, line);) {
    Row r;
    if (decode(line, r)) report.add(std::move(r));
  }
  if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    report.skipped("?", "bench", "-",
                   "a figure's process failed (wait status " + std::to_string(status) + ")");
}

}  // namespace bench
