// Figure 4: a session whose shell started a tree of N processes (a third of them escaped
// into their own sessions with setsid, as daemons do), closed to quiescence. Two hostile
// trees with no grace (HUP and TERM ignored, so only the SIGKILL rounds end them): one of
// fixed size, and a storm still forking while the close runs, which the kill has to outpace.
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dshpty_subject.hpp"
#include "figures.hpp"
#include "bash_profile.hpp"
#include "harness.hpp"
#include "process.hpp"
#include "proc_stats.hpp"

namespace bench {

namespace {

// What the shell starts before its first prompt.
enum class Tree {
  plain,    // N-1 sleeps, every third escaped into its own session with setsid
  hostile,  // N-1 sleeps that ignore HUP and TERM
  storm,    // typed at the first prompt: a subshell ignoring HUP and TERM that forks 4N
            // such sleeps, never waiting
};

// A temporary rcfile that starts the tree before the first prompt (the storm's command is
// typed after it instead); removed on scope exit.
struct TreeRc {
  std::filesystem::path dir;
  std::filesystem::path file;
  std::string typed;  // typed at the first prompt, when not empty
  TreeRc(Tree kind, int processes) {
    char tmpl[] = "/tmp/dshpty-bench-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    file = dir / "tree.rc";
    std::ofstream rc(file);
    switch (kind) {
      case Tree::plain:
        rc << "for ((i=1; i<" << processes << "; i++)); do\n"
           << "  if ((i % 3 == 0)); then setsid sleep " << kSleep << " & else sleep " << kSleep
           << " & fi\n"
           << "done\n";
        break;
      case Tree::hostile:
        // An ignored signal stays ignored across exec.
        rc << "for ((i=1; i<" << processes << "; i++)); do\n"
           << "  (trap '' HUP TERM; exec sleep " << kSleep << ") &\n"
           << "done\n";
        break;
      case Tree::storm:
        typed = "(trap '' HUP TERM; for ((i=0; i<" + std::to_string(4 * processes) +
                "; i++)); do sleep " + kSleep + " & done; wait) >/dev/null 2>&1 &";
        break;
    }
    // --rcfile does not skip Debian's /etc/bash.bashrc (only --norc does): its PS1 goes.
    rc << "PS1='" << kPs1 << "'\n";
  }
  // True for a `sleep` of this bench's trees (by its unusual duration).
  bool owns(pid_t pid) const {
    return proc_file(pid, "cmdline") == std::string("sleep") + '\0' + kSleep + '\0';
  }
  static constexpr const char* kSleep = "1000.424242";
  ~TreeRc() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// Waits until the supervisor's tree holds `want` processes (the shell included).
std::set<pid_t> wait_for_tree(pid_t supervisor, std::size_t want) {
  auto deadline = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto tree = descendants(process_table(), supervisor);
    if (tree.size() >= want) return tree;
    if (Clock::now() > deadline)
      throw std::runtime_error("the tree reached only " + std::to_string(tree.size()) +
                               " of " + std::to_string(want) + " processes");
    // The bench's own wait (not library code): the tree forks at its own pace.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The limit: the same tree under a bare bash on a PTY, every pid already known (found
// untimed), SIGKILLed through pidfds and waited for until each pidfd is readable.
Samples bare_kill(int size, const TreeRc& rc, int runs) {
  Samples ms;
  for (int i = 0; i < runs; ++i) {
    std::vector<std::string> env = bash_env();
    PtyChild bash({"/bin/bash", "--noprofile", "--rcfile", rc.file.string(), "-i"}, env, kRows,
                  kCols);
    std::string tail;
    if (!bash.read_until_prompt(tail, std::chrono::seconds(60)))
      throw std::runtime_error("bare bash: no prompt");
    // setsid children leave bash's tree for init: find them by their session's leader.
    std::set<pid_t> tree;
    auto deadline = Clock::now() + std::chrono::seconds(60);
    auto find_escapees = [&] {
      std::set<pid_t> out;
      for (auto [pid, ppid] : process_table())
        if (ppid == 1 && rc.owns(pid)) out.insert(pid);
      return out;
    };
    while (tree.size() + 1 < static_cast<std::size_t>(size)) {
      tree = descendants(process_table(), bash.pid());
      tree.merge(find_escapees());
      if (Clock::now() > deadline) {
        // bash's own session dies with `bash`; the escapees would outlive the bench.
        for (pid_t p : find_escapees()) kill(p, SIGKILL);
        throw std::runtime_error("bare tree incomplete");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    tree.insert(bash.pid());
    std::vector<pollfd> fds;
    for (pid_t p : tree) {
      int fd = static_cast<int>(syscall(SYS_pidfd_open, p, 0));
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
    auto t0 = Clock::now();
    for (const pollfd& p : fds) syscall(SYS_pidfd_send_signal, p.fd, SIGKILL, nullptr, 0);
    std::size_t open = fds.size();
    while (open) {
      if (poll(fds.data(), fds.size(), 10000) <= 0) throw std::runtime_error("bare kill stuck");
      for (pollfd& p : fds)
        if (p.fd >= 0 && p.revents) {
          close(p.fd);
          p.fd = -1;  // poll ignores negative fds
          --open;
        }
    }
    ms.add(micros_since(t0) / 1000.0);
  }
  return ms;
}

}  // namespace

namespace {

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Closes `runs` sessions of `rc`'s tree (each once it holds `size` processes), timed from
// kill() to its completion; checks that no process of the tree survived, the ones forked
// after the tree was first counted included.
// `sandboxed`: in workspace-write with the rcfile's directory as the workspace (it is under
// /tmp, which the sandbox otherwise replaces); the supervisor is then the shell's parent
// inside the pid namespace, seen by its host pid.
Samples dshpty_kill(const Plan& plan, const TreeRc& rc, std::size_t size, int runs,
                    std::chrono::milliseconds grace, std::string& note, bool sandboxed = false) {
  Harness h(plan, [&](dshpty::ShellConfig& c) {
    c.argv = {"/bin/bash", "--noprofile", "--rcfile", rc.file.string(), "-i"};
    c.startup_timeout = std::chrono::seconds(60);
    c.close_grace = grace;
    if (sandboxed) {
      c.sandbox = dshpty::SandboxMode::workspace_write;
      c.cwd = rc.dir.string();
    }
  });
  Samples ms;
  std::size_t left_behind = 0;
  for (int i = 0; i < runs; ++i) {
    auto s = h.spawn();
    pid_t shell = s.session.pid.value_or(0);
    pid_t supervisor = parent_of(shell);
    if (shell <= 0 || supervisor <= 1) throw std::runtime_error("no shell/supervisor pid");
    if (!rc.typed.empty()) h.send(s.session.id, rc.typed);
    auto tree = wait_for_tree(supervisor, size);
    auto t0 = Clock::now();
    h.close(s.session.id);
    ms.add(micros_since(t0) / 1000.0);
    for (auto [pid, ppid] : process_table())
      if (rc.owns(pid)) tree.insert(pid);
    for (pid_t p : tree) left_behind += alive(p) ? 1 : 0;
    left_behind += alive(supervisor) ? 1 : 0;
  }
  note = left_behind ? std::to_string(left_behind) + " processes LEFT BEHIND"
                     : "verified: no process of the tree left";
  note += "; min " + fixed2(ms.percentile(0)) + ", max " + fixed2(ms.percentile(100));
  return ms;
}

}  // namespace

void measure_kill(const Plan& plan, Report& report) {
  if (!plan.wants(4)) return;
  struct Case {
    Tree kind;
    int size;
    std::string metric;
  };
  std::vector<Case> cases;
  for (int size : plan.tree_sizes)
    cases.push_back({Tree::plain, size, "ms, tree of " + std::to_string(size)});
  cases.push_back({Tree::hostile, plan.hostile_tree,
                   "ms, tree of " + std::to_string(plan.hostile_tree) +
                       " ignoring HUP/TERM, grace 0"});
  cases.push_back({Tree::storm, plan.storm,
                   "ms, storm of " + std::to_string(plan.storm) +
                       "+ ignoring HUP/TERM, still forking, grace 0"});
  for (const Case& c : cases) {
    try {
      TreeRc rc(c.kind, c.size);
      // Only the plain trees have a bare counterpart: the limit kills known pids with
      // SIGKILL at once, so what a tree ignores or forks later changes nothing for it.
      const bool plain = c.kind == Tree::plain;
      int runs = c.size >= 1000 ? std::min(plan.kill_runs, 2) : plan.kill_runs;
      std::string note;
      Samples ms = dshpty_kill(plan, rc, static_cast<std::size_t>(c.size), runs,
                               plain ? dshpty::ShellConfig{}.close_grace
                                     : std::chrono::milliseconds(0),
                               note);
      report.measured(kFig4, kDshpty, c.metric, ms, note);
      if (plain)
        report.measured(kFig4, kBare, c.metric, bare_kill(c.size, rc, runs),
                        "known pids, SIGKILL via pidfd, no discovery");
      if (plain && c.size == 10) {
        try {
          std::string sandboxed_note;
          Samples sandboxed = dshpty_kill(plan, rc, static_cast<std::size_t>(c.size), runs,
                                          dshpty::ShellConfig{}.close_grace, sandboxed_note, true);
          report.measured(kFig4, kDshptySandbox, c.metric, sandboxed,
                          "workspace-write, network off; " + sandboxed_note);
        } catch (const std::exception& e) {
          report.skipped(kFig4, kDshptySandbox, c.metric, std::string("error: ") + e.what());
        }
      }
    } catch (const std::exception& e) {
      report.skipped(kFig4, kDshpty, c.metric, std::string("error: ") + e.what());
    }
  }
}

}  // namespace bench
