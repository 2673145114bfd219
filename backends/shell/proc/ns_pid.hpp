// Pids across a pid namespace. A confined session's supervisor lives in a pid namespace
// of its own (sandbox/sandbox.hpp) and reports the shell's pid as that namespace numbers
// it; the host must show and signal its own number for the same process.
//
// How: every process of the session descends from the helper the host started (outer
// bwrap, a host pid), so the host walks that tree through its own /proc and picks the
// process whose NSpid line (/proc/<pid>/status: its pid in each namespace from the
// reader's down to its own) ends in the reported pid and has more than one level. The
// shell is found while it is alive or a zombie (a zombie still has its status file);
// once its supervisor reaped it there is nothing to find.
#pragma once

#include <sys/types.h>

namespace dshpty::proc {

// The host pid of the process in `root`'s tree that its own (nested) pid namespace calls
// `ns_pid`; -1 when none is found. Reads only /proc.
pid_t host_pid_of_nested(pid_t root, pid_t ns_pid);

// The NSpid line of /proc/<pid>/status: the innermost pid and the number of levels (1 for
// a process of the reader's own namespace); false when it cannot be read.
bool innermost_pid(pid_t pid, pid_t& innermost, int& levels);

}  // namespace dshpty::proc
