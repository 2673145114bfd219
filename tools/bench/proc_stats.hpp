// What /proc says about a process: memory, CPU time, wakeups, parentage.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace bench {

// The whole of /proc/PID/LEAF (pid 0: this process); empty when the process is gone.
std::string proc_file(pid_t pid, const char* leaf);

// VmRSS in KiB; 0 when the process is gone. pid 0: this process.
long rss_kib(pid_t pid = 0);
// From /proc/PID/smaps_rollup: proportional set size and private (clean + dirty) KiB.
long pss_kib(pid_t pid);
long private_kib(pid_t pid);
// utime + stime in seconds; 0 when gone.
double cpu_seconds(pid_t pid);
// The main thread's CPU time in nanoseconds, from /proc/PID/schedstat (not tick-rounded as
// utime and stime are); 0 when gone.
double cpu_ns(pid_t pid);
// voluntary + involuntary context switches (each is a wake-up after a block or preemption).
long context_switches(pid_t pid);
// The parent pid; 0 when gone.
pid_t parent_of(pid_t pid);
// Every live process and its parent, from one scan of /proc.
std::map<pid_t, pid_t> process_table();
// The live descendants of `root` (not root itself) in a table from process_table().
std::set<pid_t> descendants(const std::map<pid_t, pid_t>& table, pid_t root);
bool alive(pid_t pid);

}  // namespace bench
