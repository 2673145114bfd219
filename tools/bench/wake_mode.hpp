// Which way a round trip's wake-ups went, so a figure compares like with like.
//
// A send crosses three tasks: the writer, the kernel worker that moves the bytes through the
// line discipline (flush_to_ldisc, on the unbound workqueue: one hop each way), and the
// shell. When the shell runs on the writer's CPU every wake-up is local; when it runs on the
// other CPU each hop is a cross-CPU wake-up, and on an idle virtual CPU that is an IPI that
// must bring a halted vCPU back (a VM exit and entry on the host) before anything runs. The
// scheduler keeps a task on its previous CPU while that CPU is idle, so a run tends to stay
// in one mode throughout: that is the bare loop's bimodality (about 30 us against 140 us on
// a quiet 2-vCPU VM). Each sample is classed by where the shell last ran against where the
// reader runs, and a run reports how idle the CPUs were (idle wake-ups cost the most).
#pragma once

#include <sys/types.h>

#include <string>

namespace bench {

enum class WakeMode { one_cpu, two_cpus, unknown };

const char* wake_mode_name(WakeMode mode);

// Where `shell` last ran against the calling thread's CPU now.
WakeMode wake_mode_of(pid_t shell);

// The machine's CPU time split, from /proc/stat's first line (jiffies).
struct CpuTimes {
  unsigned long long idle = 0, steal = 0, total = 0;
  static CpuTimes now();
};

// "CPUs idle 41%, steal 2%" between two readings.
std::string describe_cpu_share(const CpuTimes& before, const CpuTimes& after);

}  // namespace bench
