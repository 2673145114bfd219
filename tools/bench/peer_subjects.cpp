#include "peer_subjects.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <stdexcept>

#include "bash_profile.hpp"
#include "figures.hpp"
#include "process.hpp"

namespace bench {

namespace {

// One peer script's answer: "key v1 v2 ..." lines, or "skip reason".
struct PeerOutput {
  std::map<std::string, Samples> values;
  std::string skip;
};

PeerOutput parse(const std::string& out) {
  PeerOutput p;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "skip") {
      std::getline(words, p.skip);
      if (!p.skip.empty() && p.skip[0] == ' ') p.skip.erase(0, 1);
      continue;
    }
    Samples& s = p.values[key];
    for (double v; words >> v;) s.add(v);
  }
  return p;
}

struct Peer {
  std::string name;
  std::vector<std::string> interpreter;  // e.g. {"python3"} or {"node"}
  std::string script;
  std::vector<std::string> extra_env;
};

// Runs one mode of a peer; throws when it failed, returns skip reasons as they are.
PeerOutput run_peer(const Peer& peer, const std::string& mode, long long count,
                    const std::string& flood = "-") {
  std::vector<std::string> argv = peer.interpreter;
  argv.push_back(peer.script);
  argv.push_back(mode);
  argv.push_back(std::to_string(count));
  argv.push_back(flood);
  for (const std::string& e : bash_env()) argv.push_back(e);
  Captured c = run_capture(argv, peer.extra_env);
  if (!c.ok())
    throw std::runtime_error(peer.name + " " + mode + " failed (wait status " +
                             std::to_string(c.status) + ")");
  return parse(c.out);
}

std::string fmt(double v, int precision) {
  std::ostringstream s;
  s.precision(precision);
  s << std::fixed << v;
  return s.str();
}

// Figures 1-3 through a peer script; `unit_note` adds what the peer was tuned with.
void measure_script_peer(const Plan& plan, Report& report, const Peer& peer,
                         const std::string& how) {
  struct Job {
    int figure;
    const char* fig;
    const char* metric;
    const char* mode;
    const char* key;
  };
  const Job jobs[] = {{1, kFig1, kMBps, "flood", "mbps"},
                      {2, kFig2, kUs, "send", "us"},
                      {3, kFig3, kMs, "spawn", "ms"}};
  for (const Job& job : jobs) {
    if (!plan.wants(job.figure)) continue;
    try {
      long long count = job.figure == 1   ? plan.throughput_runs
                        : job.figure == 2 ? plan.round_trips
                                          : plan.spawns;
      PeerOutput out = run_peer(peer, job.mode, count, flood_command(plan.flood_bytes));
      if (!out.skip.empty()) {
        report.skipped(job.fig, peer.name, job.metric, out.skip);
        continue;
      }
      std::string note = how;
      if (job.figure == 1 && out.values.count("maxrss_kib"))
        note += (note.empty() ? "" : "; ") + std::string("peak RSS ") +
                fmt(out.values["maxrss_kib"].median() / 1024.0, 0) + " MiB";
      report.measured(job.fig, peer.name, job.metric, out.values[job.key], note);
    } catch (const std::exception& e) {
      report.skipped(job.fig, peer.name, job.metric, std::string("error: ") + e.what());
    }
  }
}

}  // namespace

void measure_pexpect(const Plan& plan, Report& report) {
  Peer peer{kPexpect, {plan.python}, plan.peers_dir + "/pexpect_peer.py", {}};
  measure_script_peer(plan, report, peer, "maxread 64 KiB, delaybeforesend None");
}

void measure_node_pty(const Plan& plan, Report& report) {
  std::vector<std::string> env;
  if (!plan.node_modules.empty()) env.push_back("NODE_PATH=" + plan.node_modules);
  Peer peer{kNodePty, {plan.node}, plan.peers_dir + "/node_pty_peer.js", env};
  measure_script_peer(plan, report, peer, "");
  if (!plan.wants(5)) return;
  int n = plan.quick ? 20 : 100;
  try {
    PeerOutput out = run_peer(peer, "scale", n);
    if (!out.skip.empty()) {
      report.skipped(kFig5, kNodePty, "host growth KiB/session", out.skip);
      return;
    }
    report.measured(kFig5, kNodePty, "host growth KiB/session", out.values["kib_per_session"],
                    std::to_string(n) + " sessions, " +
                        fmt(out.values["threads"].median(), 0) + " threads in the host, open " +
                        fmt(out.values["open_ms"].median(), 0) + " ms");
  } catch (const std::exception& e) {
    report.skipped(kFig5, kNodePty, "host growth KiB/session", std::string("error: ") + e.what());
  }
}

void measure_tmux(const Plan& plan, Report& report) {
  if (!plan.wants(2)) return;
  if (run_quiet({"tmux", "-V"}) != 0) {
    report.skipped(kFig2, kTmux, kUs, "tmux not installed");
    return;
  }
  // The server's socket in a private directory removed with it: with -L, tmux would leave
  // /tmp/tmux-UID/<name> behind after every run.
  char dir_template[] = "/tmp/dshpty-bench-tmux-XXXXXX";
  if (!::mkdtemp(dir_template)) {
    report.skipped(kFig2, kTmux, kUs, "no temporary directory for tmux's socket");
    return;
  }
  const std::string dir = dir_template;
  const std::string sock = dir + "/socket";
  const std::string chan = "dshpty-bench-ready";
  // The prompt signals a wait-for channel, as a tmux-driven agent would wait for it.
  std::string shell = "exec env -i";
  for (const std::string& e : bash_env("tmux -S " + sock + " wait-for -S " + chan)) {
    std::string quoted = "'";
    for (char c : e) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    shell += " " + quoted + "'";
  }
  for (const std::string& a : bash_argv()) shell += " " + a;
  auto tmux = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{"tmux", "-f", "/dev/null", "-S", sock};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_quiet(argv);
  };
  try {
    if (tmux({"new-session", "-d", "-s", "bench", "-x", std::to_string(kCols), "-y",
              std::to_string(kRows), shell}) != 0)
      throw std::runtime_error("tmux new-session failed");
    tmux({"wait-for", chan});  // the first prompt
    Samples s;
    for (int i = 0; i < plan.round_trips; ++i) {
      auto t0 = Clock::now();
      if (tmux({"send-keys", "-t", "bench", "true", "Enter"}) != 0)
        throw std::runtime_error("tmux send-keys failed");
      if (tmux({"wait-for", chan}) != 0) throw std::runtime_error("tmux wait-for failed");
      s.add(micros_since(t0));
    }
    tmux({"kill-server"});
    report.measured(kFig2, kTmux, kUs, s, "send-keys + wait-for: two client processes");
  } catch (const std::exception& e) {
    tmux({"kill-server"});
    report.skipped(kFig2, kTmux, kUs, std::string("error: ") + e.what());
  }
  ::unlink(sock.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace bench
