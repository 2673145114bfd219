// Helpers for the job-parts tests that run real processes: a bash script as the root of
// a tree (its own process group, stdout on a pipe), lines read with a bound, and the whole
// tree killed and reaped at the end, orphans included (the test process is a subreaper
// while one lives, as the session's helper is).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dshpty::test {

class ScriptTree {
 public:
  // Runs `bash -c script` (in its own process group); throws nothing, check pid() > 0.
  explicit ScriptTree(const std::string& script);
  // An interactive bash (no startup files) on a new PTY, as a session runs it: job control
  // on, each job its own group. write() types into it; read_line() reads the terminal,
  // CRs and escape sequences removed (the echo of what was typed comes back too).
  struct Interactive {};
  explicit ScriptTree(Interactive);
  ~ScriptTree();
  ScriptTree(const ScriptTree&) = delete;
  ScriptTree& operator=(const ScriptTree&) = delete;

  pid_t pid() const { return pid_; }
  // The next line of the script's stdout, or nothing after `timeout` / at EOF.
  // Writes to the script's stdin (a pipe).
  void write(const std::string& text);
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Every pid under this test process (the subreaper), the test process excluded.
  static std::vector<pid_t> everything_below();

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int in_ = -1;
  bool terminal_ = false;
  std::string pending_;
};

}  // namespace dshpty::test
