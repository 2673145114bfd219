// Child processes the bench itself starts (bare PTY subjects, tmux clients, peer scripts).
// This is a tool, not the library: it may block, wait for its own children and throw.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace bench {

// A child on a fresh PTY (its controlling terminal, on fds 0-2), in its own session.
class PtyChild {
 public:
  PtyChild() = default;
  // Opens the PTY, sets rows x cols, posix_spawns argv with exactly `env`. Throws on failure.
  PtyChild(const std::vector<std::string>& argv, const std::vector<std::string>& env,
           unsigned rows, unsigned cols);
  PtyChild(PtyChild&& other) noexcept;
  PtyChild& operator=(PtyChild&& other) noexcept;
  ~PtyChild();  // SIGKILLs the child's session, reaps it, closes the master

  int master() const noexcept { return master_; }
  pid_t pid() const noexcept { return pid_; }
  // Reads into `tail` (keeping its newest bytes) until ends_at_prompt(tail); false on EOF/EIO
  // or when the deadline passes.
  bool read_until_prompt(std::string& tail, std::chrono::milliseconds limit);
  // The same, until `done(tail)`.
  bool read_until(std::string& tail, std::chrono::milliseconds limit,
                  const std::function<bool(std::string_view)>& done);
  void write_all(std::string_view bytes);
  // Reaps the child (blocking); returns its wait status.
  int wait();

 private:
  void release() noexcept;
  int master_ = -1;
  pid_t pid_ = -1;
};

struct Captured {
  int status = -1;  // wait status
  std::string out;  // stdout
  bool ok() const;
};

// Runs argv (PATH lookup) with this process's environment plus `extra_env`, stdin from
// /dev/null, stderr inherited; waits for it.
Captured run_capture(const std::vector<std::string>& argv,
                     const std::vector<std::string>& extra_env = {});
// The same without capturing (stdout to /dev/null); returns the wait status.
int run_quiet(const std::vector<std::string>& argv);

// Raises RLIMIT_NOFILE's soft limit to the hard limit; returns the new soft limit.
unsigned long raise_fd_limit();

}  // namespace bench
