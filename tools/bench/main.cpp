// dshpty-bench: dshpty's shell backend measured against the physical limit (a bare PTY in
// this process) and against the peers a user would pick instead, in one run, figure by
// figure so each figure's subjects run side by side in time.
//
//   dshpty-bench [--quick] [--json] [--only 1,2,...] [--supervisor PATH] [--peers-dir DIR]
//                [--node-modules DIR] [--python PATH] [--node PATH] [--sessions N]
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "bare_subjects.hpp"
#include "dshpty_subject.hpp"
#include "figures.hpp"
#include "peer_subjects.hpp"
#include "send_figure.hpp"
#include "record_figure.hpp"
#include "plan.hpp"
#include "report.hpp"
#include "fresh_process.hpp"
#include "verdicts.hpp"

#ifndef BENCH_PEERS_DIR
#define BENCH_PEERS_DIR ""
#endif
#ifndef BENCH_NODE_MODULES
#define BENCH_NODE_MODULES ""
#endif

namespace {

int usage(const char* why) {
  std::cerr << "dshpty-bench: " << why
            << "\nusage: dshpty-bench [--quick] [--json] [--only 1,2,3,4,5,6] [--supervisor PATH]\n"
               "                    [--peers-dir DIR] [--node-modules DIR] [--python PATH]\n"
               "                    [--node PATH] [--sessions N]\n";
  return 2;
}

// Every subject gets the same bash environment: the bench's own is cut down to PATH and
// HOME (plus what finds the helper), so the shell backend inherits nothing else either.
void reduce_environment() {
  std::string keep[] = {"PATH", "HOME", "DSHPTY_SUPERVISOR"};
  std::string values[3];
  bool present[3] = {false, false, false};
  for (int i = 0; i < 3; ++i)
    if (const char* v = std::getenv(keep[i].c_str())) {
      values[i] = v;
      present[i] = true;
    }
  clearenv();
  for (int i = 0; i < 3; ++i)
    if (present[i]) setenv(keep[i].c_str(), values[i].c_str(), 1);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, json = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  bench::Plan plan = quick ? bench::Plan::quick_plan() : bench::Plan{};
  plan.peers_dir = BENCH_PEERS_DIR;
  plan.node_modules = BENCH_NODE_MODULES;
  if (access("/usr/bin/python3", X_OK) == 0) plan.python = "/usr/bin/python3";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--quick") continue;
      if (a == "--json") json = true;
      else if (a == "--supervisor") plan.supervisor = value();
      else if (a == "--peers-dir") plan.peers_dir = value();
      else if (a == "--node-modules") plan.node_modules = value();
      else if (a == "--python") plan.python = value();
      else if (a == "--node") plan.node = value();
      else if (a == "--sessions") plan.sessions = std::stoi(value());
      else if (a == "--only") {
        std::istringstream list(value());
        for (std::string f; std::getline(list, f, ',');) plan.only.push_back(f);
      } else if (a == "--help" || a == "-h") {
        usage("help");
        return 0;
      } else {
        return usage(("unknown argument " + a).c_str());
      }
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  if (plan.peers_dir.empty()) return usage("--peers-dir is needed (not built with one)");
  reduce_environment();
  // A peer that dies must not take the bench with it through a broken pipe.
  signal(SIGPIPE, SIG_IGN);

  bench::Report report;
  report.mode = quick ? "quick" : "full";
  report.machine = bench::describe_machine();
  for (int figure = 1; figure <= 6; ++figure) {
    if (!plan.wants(figure)) continue;
    bench::Plan one = plan;
    one.only = {std::to_string(figure)};
    std::cerr << "dshpty-bench: figure " << figure << "...\n";
    bench::run_in_fresh_process(report, [&](bench::Report& r) {
      if (bench::profiling_sends()) {
        if (one.wants(2)) bench::measure_send_side_by_side(one, r);
        return;
      }
      bench::measure_bare(one, r);
      if (one.wants(2)) bench::measure_send_side_by_side(one, r);
      if (one.wants(6)) bench::measure_recording(one, r);
      bench::measure_dshpty(one, r);
      bench::measure_kill(one, r);
      bench::measure_scale(one, r);
      bench::measure_node_pty(one, r);
      bench::measure_pexpect(one, r);
      bench::measure_tmux(one, r);
    });
  }
  for (const char* fig : {bench::kFig1, bench::kFig2, bench::kFig3, bench::kFig4})
    report.ratios_against(fig, bench::kBare);
  bench::judge_targets(report);
  if (json)
    report.print_json(std::cout);
  else
    report.print_table(std::cout);
  return 0;
}
