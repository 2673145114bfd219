// A remote session's transport (ssh, `podman exec -i`, `sh -c`): a program whose stdin and
// stdout are the link to the far `dshpty-supervisor --stdio`. Started by one posix_spawnp
// in a session of its own (the host terminal's job-control signals never reach it), every
// signal at its default, with exactly three fds: the link socket on 0 and 1, a pipe on 2
// whose text names a failure. Watched through its pidfd (no ev_child, no waitpid(-1)).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "dshpty/result.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell {

using proc::UniqueFd;

struct Transport {
  pid_t pid = -1;
  UniqueFd pidfd;   // readable once it exited
  UniqueFd link;    // our end of its stdin/stdout: a SOCK_STREAM, CLOEXEC, non-blocking
  UniqueFd error_text;  // the read end of its stderr, CLOEXEC, non-blocking
};

// BACKEND_FAILED naming the program when it cannot be started; nothing is left running.
// `pass_fd` (>= 0): also given to the child as its fd 3 (a local lingering session's
// recording, for its helper).
Result<Transport> spawn_transport(const std::vector<std::string>& argv, int pass_fd = -1);

// Keeps the last `limit` bytes a transport wrote to its stderr, and says them as one line.
class StderrTail {
 public:
  explicit StderrTail(std::size_t limit = 4096) : limit_(limit) {}
  // Reads what `fd` holds now (non-blocking). False at its EOF.
  bool read_from(int fd);
  // The last non-empty line (ssh's "Permission denied (publickey)."), or "".
  std::string last_line() const;

 private:
  std::size_t limit_;
  std::string text_;
};

}  // namespace dshpty::shell
