#include "proc/job_stop.hpp"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <unordered_map>
#include <utility>

#include "proc/comm.hpp"
#include "proc/listening_ports.hpp"
#include "proc/pidfd.hpp"
#include "proc/procfs.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::proc {
namespace {

// What the job's membership rules read of /proc/<pid>/stat.
struct Facts {
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t sid = 0;
  pid_t tpgid = 0;            // the foreground group of its terminal
  std::uint64_t started = 0;  // field 22, starttime
};

// "pid (comm) state ppid pgrp ... starttime(22) ...": after the last ')', as procfs.hpp
// reads it (comm may hold ')' and spaces).
bool read_facts(pid_t pid, Facts& out) {
  char buf[1024];
  if (procfs::read_small(procfs::Path(pid).text("/stat").c_str(), buf, sizeof buf) <= 0) return false;
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ' || p[2] == '\0' || p[3] != ' ') return false;
  out.state = p[2];
  p += 4;
  long fields[19] = {};  // fields 4..22
  for (long& field : fields) {
    if (!procfs::parse_decimal(p, field)) return false;
    if (*p == ' ') ++p;
  }
  out.ppid = static_cast<pid_t>(fields[0]);
  out.pgrp = static_cast<pid_t>(fields[1]);
  out.sid = static_cast<pid_t>(fields[2]);
  out.tpgid = static_cast<pid_t>(fields[4]);
  out.started = static_cast<std::uint64_t>(fields[18]);
  return true;
}

const char* signal_name(int signo) {
  switch (signo) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGKILL: return "SIGKILL";
    default: return "SIG?";
  }
}

// In the tick the job started in, a process is the job's only if its pid came after the
// newest pid at the job's start (pids count up; a difference past half of the smallest
// pid_max is the counter wrapping, not an older process). Without that pid: the tick alone.
bool born_after(pid_t pid, pid_t last) {
  return last <= 0 || pid > last || last - pid > (1 << 14);
}

// Whether `pid` was handed out after `first` and not after `last` (both known), the counter
// perhaps having wrapped between them.
bool handed_out_between(pid_t pid, pid_t first, pid_t last) {
  if (first <= 0 || last <= 0 || pid <= 0) return false;
  return first <= last ? pid > first && pid <= last : pid > first || pid <= last;
}

bool holds(const std::vector<pid_t>& ids, pid_t id) {
  for (pid_t x : ids)
    if (x == id) return true;
  return false;
}

}  // namespace

pid_t newest_pid() {
  char buf[32];
  const ssize_t n = procfs::read_small("/proc/sys/kernel/ns_last_pid", buf, sizeof buf);
  if (n <= 0) return 0;
  const char* p = buf;
  long value = 0;
  return procfs::parse_decimal(p, value) ? static_cast<pid_t>(value) : 0;
}

std::uint64_t boot_ticks_now() {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  const auto hz = static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
  return static_cast<std::uint64_t>(now.tv_sec) * hz +
         static_cast<std::uint64_t>(now.tv_nsec) * hz / 1000000000u;
}

std::vector<pid_t> job_processes(pid_t root, pid_t shell, std::uint64_t started_ticks) {
  std::vector<pid_t> out;
  std::unordered_map<pid_t, bool> own;  // parents come before their children in the tree
  for (pid_t pid : tree_pids(root)) {
    Facts f;
    if (pid == root || pid == shell || !read_facts(pid, f) || f.started < started_ticks) continue;
    if (f.ppid == shell || f.ppid == root || own.contains(f.ppid)) {
      own[pid] = true;
      out.push_back(pid);
    }
  }
  return out;
}

struct JobStop::Pinned {
  JobStop* owner = nullptr;
  pid_t pid = 0;
  std::uint64_t started = 0;
  UniqueFd fd;
  ev_io watcher{};
  bool gone = false;
  int refused = 0;  // the errno of a signal the kernel refused (EPERM), else 0
};

JobStop::JobStop(struct ev_loop* loop, JobSpec job, StopTimings timings, Done done)
    : loop_(loop), job_(job), timings_(timings), done_(std::move(done)) {
  timer_.bind<&JobStop::on_timer>(loop_, this);
  if (job_.group > 0) groups_.push_back(job_.group);
  find();
  if (live() == 0) {
    // Nothing to stop: said from the loop, as every completion is.
    step_ = Step::done;
    timer_.start(std::chrono::nanoseconds(0));
    return;
  }
  if (job_.group > 0) interrupt_shell();
  signal_all(SIGINT);
  timer_.start(timings_.after_interrupt);
}

void JobStop::interrupt_shell() {
  // Only while the shell waits for its foreground command (the terminal is not its own):
  // at its prompt the interrupt would redraw it. Sent before the command's own SIGINT, so
  // the shell holds it when the command ends.
  Facts shell;
  if (job_.shell <= 0 || !read_facts(job_.shell, shell) || shell.tpgid <= 0 || shell.tpgid == shell.pgrp) return;
  UniqueFd fd(sys::pidfd_open(job_.shell, 0));
  Facts again;
  if (!fd.valid() || !read_facts(job_.shell, again) || again.started != shell.started) return;
  sys::pidfd_send_signal(fd.get(), SIGINT);
}

void JobStop::job_ended(std::uint64_t ended_ticks, pid_t ended_last_pid) {
  if (job_.ended_ticks != 0) return;
  job_.ended_ticks = ended_ticks != 0 ? ended_ticks : boot_ticks_now();
  job_.ended_last_pid = ended_last_pid;
}

JobStop::~JobStop() {
  for (auto& p : pinned_)
    if (!p->gone) ev_io_stop(loop_, &p->watcher);
}

std::size_t JobStop::live() const {
  std::size_t n = 0;
  for (const auto& p : pinned_) n += p->gone ? 0 : 1;
  return n;
}

bool JobStop::find() {
  std::vector<pid_t> tree = tree_pids(job_.root);
  std::unordered_map<pid_t, Facts> facts;
  std::unordered_multimap<pid_t, pid_t> children;
  for (pid_t pid : tree) {
    Facts f;
    if (!read_facts(pid, f)) continue;
    facts.emplace(pid, f);
    children.emplace(f.ppid, pid);
  }
  const bool running = job_.ended_ticks == 0;
  Facts shell;
  if (auto it = facts.find(job_.shell); it != facts.end()) shell = it->second;
  // While the job runs, a new group in the terminal's foreground is its line's next command
  // (the shell moves the terminal to each command of a list in turn).
  if (running && shell.tpgid > 0 && shell.tpgid != shell.pgrp && !holds(groups_, shell.tpgid))
    groups_.push_back(shell.tpgid);
  // The seeds: the groups, the orphans the job left with the subreaper, what lives in a group
  // or session the job made, and every process found before that still lives.
  std::vector<pid_t> job;
  for (pid_t pid : tree) {
    auto it = facts.find(pid);
    if (it == facts.end() || pid == job_.root || pid == job_.shell) continue;
    const Facts& f = it->second;
    const bool in_time = f.started >= job_.started_ticks && (running || f.started <= job_.ended_ticks) &&
                         (f.started != job_.started_ticks || born_after(pid, job_.last_pid)) &&
                         (running || f.started != job_.ended_ticks || job_.ended_last_pid <= 0 ||
                          !born_after(pid, job_.ended_last_pid));
    // The shell's children of the job's time are what its line started: its commands (in
    // its groups) and its own `&` (a group of its own), while it runs as after its end. An
    // earlier `&` started before the job; a later command's after its end. While it runs
    // only with the newest pid at its start known: a far start told only "so long ago" (a
    // second early for the link) would take in an earlier `&` of that second.
    const bool left = f.ppid == job_.root || (f.ppid == job_.shell && (!running || job_.last_pid > 0));
    const bool in_group = holds(groups_, f.pgrp) && (f.pgrp == job_.group || f.started >= job_.started_ticks);
    // A group or session a process of the job made: led by one found, or (an ended job) by a
    // pid handed out while the job ran, its leader perhaps gone before the stop looked.
    auto made = [&](pid_t id) {
      if (id <= 0 || id == shell.pgrp || id == shell.sid || id == job_.shell) return false;
      return holds(report_.found, id) || (!running && handed_out_between(id, job_.last_pid, job_.ended_last_pid));
    };
    bool known = false;
    for (const auto& p : pinned_) known = known || (!p->gone && p->pid == pid && p->started == f.started);
    if (in_group || (left && in_time) || made(f.pgrp) || made(f.sid) || known) job.push_back(pid);
  }
  // Their descendants, whatever group or session they moved to.
  std::unordered_map<pid_t, bool> seen;
  for (pid_t pid : job) seen[pid] = true;
  for (std::size_t next = 0; next < job.size(); ++next) {
    auto [first, last] = children.equal_range(job[next]);
    for (auto c = first; c != last; ++c) {
      if (c->second == job_.shell || seen[c->second]) continue;
      seen[c->second] = true;
      job.push_back(c->second);
    }
  }
  bool added = false;
  for (pid_t pid : job) {
    const Facts& f = facts[pid];
    if (f.state == 'Z' || f.state == 'X') continue;  // exited: its reaper's business
    bool known = false;
    for (const auto& p : pinned_) known = known || (p->pid == pid && p->started == f.started);
    if (known) continue;
    UniqueFd fd(sys::pidfd_open(pid, 0));
    if (!fd.valid()) continue;  // gone meanwhile
    // The pin holds *a* process with this pid; the same start time proves it is the one
    // the tree showed, not a recycled pid.
    Facts again;
    if (!read_facts(pid, again) || again.started != f.started) continue;
    auto p = std::make_unique<Pinned>();
    p->owner = this;
    p->pid = pid;
    p->started = f.started;
    p->fd = std::move(fd);
    ev_io_init(&p->watcher, [](struct ev_loop*, ev_io* w, int) {
      auto* pinned = static_cast<Pinned*>(w->data);
      pinned->owner->on_exit(*pinned);
    }, p->fd.get(), EV_READ);
    p->watcher.data = p.get();
    ev_io_start(loop_, &p->watcher);
    report_.found.push_back(pid);
    pinned_.push_back(std::move(p));
    added = true;
  }
  return added;
}

void JobStop::signal_all(int signo) {
  // The report names each signal once: a last SIGKILL round for what forked at the last
  // moment is the same step.
  if (report_.signals.empty() || report_.signals.back() != signal_name(signo))
    report_.signals.emplace_back(signal_name(signo));
  for (auto& p : pinned_) {
    if (p->gone) continue;
    if (sys::pidfd_send_signal(p->fd.get(), signo) != 0 && errno == EPERM) p->refused = EPERM;
    // A stopped process (SIGTSTP: a job the shell holds stopped) acts on the signal only once
    // continued, after it (SIGKILL needs no help). The state is read by pid; the SIGCONT
    // goes by the pidfd, so a pid reused meanwhile gets nothing.
    Facts now;
    if (signo == SIGTERM || (signo != SIGKILL && read_facts(p->pid, now) && now.state == 'T'))
      sys::pidfd_send_signal(p->fd.get(), SIGCONT);
  }
}

void JobStop::on_timer() {
  switch (step_) {
    case Step::interrupt:
      find();
      signal_all(SIGTERM);
      step_ = Step::terminate;
      timer_.start(timings_.after_terminate);
      return;
    case Step::terminate:
      find();
      signal_all(SIGKILL);
      step_ = Step::kill;
      timer_.start(timings_.after_kill);
      return;
    case Step::kill:
      // Forked at the last moment: one more SIGKILL round for those, then the verdict.
      if (find()) {
        signal_all(SIGKILL);
        step_ = Step::last_look;
        timer_.start(timings_.after_kill);
        return;
      }
      finish(live() == 0);
      return;
    case Step::last_look:
      finish(live() == 0);
      return;
    case Step::done:
      check_done();
      return;
  }
}

void JobStop::on_exit(Pinned& p) {
  ev_io_stop(loop_, &p.watcher);
  p.gone = true;
  p.fd.reset();
  check_done();
}

void JobStop::check_done() {
  if (live() != 0) return;
  // The proof: the tree read afresh shows nothing of the job. What it shows that is new
  // (forked while the others died) gets the latest signal and is waited for too.
  if (find()) {
    int latest = step_ == Step::interrupt ? SIGINT : step_ == Step::terminate ? SIGTERM : SIGKILL;
    if (step_ == Step::done) {
      step_ = Step::interrupt;
      timer_.start(timings_.after_interrupt);
    }
    signal_all(latest);
    return;
  }
  finish(true);
}

void JobStop::finish(bool stopped) {
  timer_.stop();
  step_ = Step::done;
  report_.stopped = stopped;
  for (auto& p : pinned_) {
    if (p->gone) continue;
    RemainingProcess r;
    r.pid = p->pid;
    r.command = read_comm(p->pid);
    Facts f;
    if (p->refused != 0) {
      r.why = std::string("signal refused: ") + std::strerror(p->refused);
    } else if (read_facts(p->pid, f) && f.state == 'D') {
      r.why = "uninterruptible sleep (D)";
    } else {
      r.why = "alive after SIGKILL";
    }
    report_.remaining.push_back(std::move(r));
    ev_io_stop(loop_, &p->watcher);
    p->gone = true;
    p->fd.reset();
  }
  // Last: the callback may destroy this.
  Done done = std::move(done_);
  done_ = nullptr;
  if (done) done(report_);
}

}  // namespace dshpty::proc
