// Figure 4: a session whose shell started a tree of N processes (a third of them escaped
// into their own sessions with setsid, as daemons do), closed to quiescence.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "dshpty_subject.hpp"
#include "figures.hpp"
#include "harness.hpp"
#include "proc_stats.hpp"

namespace bench {

namespace {

// A temporary rcfile that starts the tree before the first prompt; removed on scope exit.
struct TreeRc {
  std::filesystem::path dir;
  std::filesystem::path file;
  explicit TreeRc(int processes) {
    char tmpl[] = "/tmp/dshpty-bench-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    file = dir / "tree.rc";
    std::ofstream rc(file);
    rc << "for ((i=1; i<" << processes << "; i++)); do\n"
       << "  if ((i % 3 == 0)); then setsid sleep 1000 & else sleep 1000 & fi\n"
       << "done\n"
       // --rcfile does not skip Debian's /etc/bash.bashrc (only --norc does): its PS1 goes.
       << "PS1='dsh> '\n";
  }
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

}  // namespace

void measure_kill(const Plan& plan, Report& report) {
  if (!plan.wants(4)) return;
  for (int size : plan.tree_sizes) {
    const std::string metric = "ms, tree of " + std::to_string(size);
    try {
      TreeRc rc(size);
      Harness h(plan, [&](dshpty::ShellConfig& c) {
        c.argv = {"/bin/bash", "--noprofile", "--rcfile", rc.file.string(), "-i"};
        c.startup_timeout = std::chrono::seconds(60);
      });
      int runs = size >= 1000 ? std::min(plan.kill_runs, 2) : plan.kill_runs;
      Samples ms;
      std::size_t left_behind = 0;
      for (int i = 0; i < runs; ++i) {
        auto s = h.spawn();
        pid_t shell = s.session.pid.value_or(0);
        pid_t supervisor = parent_of(shell);
        if (shell <= 0 || supervisor <= 1) throw std::runtime_error("no shell/supervisor pid");
        auto tree = wait_for_tree(supervisor, static_cast<std::size_t>(size));
        auto t0 = Clock::now();
        h.close(s.session.id);
        ms.add(micros_since(t0) / 1000.0);
        for (pid_t p : tree) left_behind += alive(p) ? 1 : 0;
        left_behind += alive(supervisor) ? 1 : 0;
      }
      report.measured(kFig4, kDshpty, metric, ms,
                      left_behind ? std::to_string(left_behind) + " processes LEFT BEHIND"
                                  : "verified: no process of the tree left");
    } catch (const std::exception& e) {
      report.skipped(kFig4, kDshpty, metric, std::string("error: ") + e.what());
    }
  }
}

}  // namespace bench
