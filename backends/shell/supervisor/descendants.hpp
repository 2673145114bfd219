// Finding and signalling every descendant of the supervisor, from /proc (this kernel has
// no /proc/<pid>/task/<tid>/children, so the whole process table is scanned).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <initializer_list>

namespace dshpty::supervisor {

struct SignalRound {
  std::size_t signalled = 0;  // live descendants that were sent the signal
  std::size_t zombies = 0;    // descendants already dead, waiting to be reaped
};

// Sends each of `signals`, in order, to every live descendant of `root` (normally
// getpid()), from one scan. Each target is pinned with a pidfd and re-checked to still
// have the parent the scan saw, so a pid recycled between the scan and the signal is never
// hit. Never fails: a process that vanished meanwhile is simply skipped.
SignalRound signal_descendants(pid_t root, std::initializer_list<int> signals);

}  // namespace dshpty::supervisor
