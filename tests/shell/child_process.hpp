// Running a test body in a forked child process, so that what it does to process-wide
// state (SIGCHLD disposition, libev's default loop) or to itself (being SIGKILLed) never
// touches the other tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>

namespace dshpty::test {

struct ChildProcess {
  pid_t pid = -1;
  int pidfd = -1;
  int from_child = -1;  // read end of a pipe whose write end the child got as `report_fd`
};

// Forks; the child runs body(report_fd) and _exits with its return value.
ChildProcess fork_child(const std::function<int(int report_fd)>& body);
// Waits (poll on the pidfd, bounded) for the child's exit; its exit code, or -1 on timeout
// (then the child is SIGKILLed and reaped) or when it died by a signal.
int wait_child(ChildProcess& child, std::chrono::milliseconds timeout);
// Reads one byte from the child's pipe, bounded; false on timeout or EOF.
bool read_byte(const ChildProcess& child, std::chrono::milliseconds timeout, char& out);
void close_child(ChildProcess& child);

}  // namespace dshpty::test
