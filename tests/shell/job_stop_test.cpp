// Stopping a job with proof (proc/job_stop.hpp) on a real bash with job control: a job
// whose server double-forks and setsids is stopped whole, while an earlier `sleep 999 &`
// and a daemon an earlier command double-forked survive, and the shell carries on.
#include <doctest/doctest.h>

#include <ev.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "job_procs.hpp"
#include "proc/job_stop.hpp"
#include "proc/listening_ports.hpp"

using dshpty::proc::JobSpec;
using dshpty::proc::JobStop;
using dshpty::proc::StopReport;
using dshpty::proc::StopTimings;
using dshpty::test::ScriptTree;

namespace {

// "pid (comm) S ..." -> S, or nothing when the process is gone.
std::optional<char> state_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return std::nullopt;
  auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return std::nullopt;
  return text[close + 2];
}

bool alive(pid_t pid) {
  auto s = state_of(pid);
  return s && *s != 'Z' && *s != 'X';
}

std::uint64_t start_ticks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  std::string rest = text.substr(text.rfind(')') + 2);
  std::size_t field = 3, at = 0;
  while (field < 22 && at != std::string::npos) {
    at = rest.find(' ', at) + 1;
    ++field;
  }
  return std::stoull(rest.substr(at));
}

// The job's start must fall after everything the earlier commands started: a tick later
// than the newest of them (the rule compares start times, in 10 ms ticks).
std::uint64_t tick_after(std::uint64_t ticks) {
  while (dshpty::proc::boot_ticks_now() <= ticks) ::poll(nullptr, 0, 1);
  return dshpty::proc::boot_ticks_now();
}

// Runs the stop on a fresh loop until it reports (or a 60 s guard, which fails the test).
StopReport run_stop(JobSpec job, StopTimings timings) {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  std::optional<StopReport> report;
  bool called_inside = true;
  std::unique_ptr<JobStop> stop;
  stop = std::make_unique<JobStop>(loop, job, timings, [&](StopReport r) {
    report = std::move(r);
    stop.reset();  // destroying it from its own callback is allowed
  });
  called_inside = report.has_value();
  ev_timer guard;
  ev_timer_init(&guard, [](struct ev_loop* l, ev_timer*, int) { ev_break(l, EVBREAK_ALL); }, 60., 0.);
  ev_timer_start(loop, &guard);
  while (!report && ev_run(loop, EVRUN_ONCE)) {
    if (!ev_is_active(&guard)) break;
  }
  ev_timer_stop(loop, &guard);
  stop.reset();
  ev_loop_destroy(loop);
  CHECK_FALSE(called_inside);
  REQUIRE(report.has_value());
  return *report;
}

// What follows `marker` and a digit on the first line the terminal shows with them (the
// typed commands' echo has `$` there; output of a background process may follow a prompt
// on its line); empty on timeout.
std::string until_marker(ScriptTree& shell, const std::string& marker) {
  while (auto line = shell.read_line()) {
    for (auto at = line->find(marker); at != std::string::npos; at = line->find(marker, at + 1)) {
      std::size_t value = at + marker.size();
      if (value < line->size() && (*line)[value] >= '0' && (*line)[value] <= '9') return line->substr(value);
    }
  }
  return {};
}

bool have_python() { return std::system("command -v python3 >/dev/null 2>&1") == 0; }

}  // namespace

TEST_CASE("job stop: a double-forked setsid server goes with its job; earlier & jobs stay") {
  if (!have_python()) {
    MESSAGE("skipped: no python3");
    return;
  }
  ScriptTree shell{ScriptTree::Interactive{}};
  REQUIRE(shell.pid() > 0);
  // What an earlier command left running: a job in the background, and a daemon that
  // double-forked away from its command.
  shell.write("sleep 999 &\n");
  shell.write("echo \"bg=$!\"\n");
  shell.write("( setsid bash -c 'echo daemon=$$; exec sleep 998' & )\n");
  pid_t bg = std::atoi(until_marker(shell, "bg=").c_str());
  pid_t daemon = std::atoi(until_marker(shell, "daemon=").c_str());
  REQUIRE(bg > 0);
  REQUIRE(daemon > 0);
  shell.write("export SRV='import socket,time,os; s=socket.socket(); s.bind((\"127.0.0.1\",0)); "
              "s.listen(); print(\"server=%d %d\" % (os.getpid(), s.getsockname()[1]), flush=True); "
              "time.sleep(999)'\n");
  JobSpec spec;
  spec.started_ticks = tick_after(std::max(start_ticks(bg), start_ticks(daemon)));
  // The job: its server double-forks and setsids; the job itself then waits in the foreground.
  shell.write("bash -c 'echo job=$$; ( setsid python3 -u -c \"$SRV\" & ); exec sleep 997'\n");
  pid_t job = std::atoi(until_marker(shell, "job=").c_str());
  pid_t server = 0;
  int port = 0;
  std::sscanf(until_marker(shell, "server=").c_str(), "%d %d", &server, &port);
  REQUIRE(job > 0);
  REQUIRE(server > 0);
  // The server left the job's group and session, and its parent is gone: it hangs off the
  // subreaper (this process), as it would off the session's helper.
  CHECK(::getpgid(server) != job);
  CHECK(::getsid(server) == server);
  CHECK(::getpgid(bg) != job);
  std::vector<pid_t> before = ScriptTree::everything_below();
  auto scan = dshpty::proc::scan_listening_ports(before);
  REQUIRE(scan.ok());
  REQUIRE(std::any_of(scan->sockets.begin(), scan->sockets.end(),
                      [&](const auto& s) { return s.port == port && s.pid == server; }));

  spec.group = job;  // under job control the job's group is its first process
  spec.root = ::getpid();
  spec.shell = shell.pid();
  StopReport report = run_stop(spec, StopTimings{});
  CHECK(report.stopped);
  CHECK(report.remaining.empty());
  REQUIRE_FALSE(report.signals.empty());
  CHECK(report.signals.front() == "SIGINT");
  CHECK(std::find(report.found.begin(), report.found.end(), server) != report.found.end());
  CHECK(std::find(report.found.begin(), report.found.end(), job) != report.found.end());
  CHECK(std::find(report.found.begin(), report.found.end(), bg) == report.found.end());
  CHECK(std::find(report.found.begin(), report.found.end(), daemon) == report.found.end());
  CHECK_FALSE(alive(server));
  CHECK_FALSE(alive(job));
  // What earlier commands left running, and the shell, are untouched; the shell goes on.
  CHECK(alive(bg));
  CHECK(alive(daemon));
  CHECK(alive(shell.pid()));
  shell.write("echo \"done=$? $SRV\" | cut -c1-30\n");
  CHECK(until_marker(shell, "done=").rfind("130 import socket", 0) == 0);
  // The port is free: nothing of the tree listens on it any more.
  auto after = dshpty::proc::scan_listening_ports(ScriptTree::everything_below());
  REQUIRE(after.ok());
  CHECK(std::none_of(after->sockets.begin(), after->sockets.end(),
                     [&](const auto& s) { return s.port == port; }));
}

TEST_CASE("job stop: a job deaf to SIGINT and SIGTERM gets SIGKILL, and says so") {
  ScriptTree shell(
      "set -m\n"
      "read go\n"
      "bash -c 'trap \"\" INT TERM; echo \"job $$\"; "
      "( trap \"\" INT TERM; setsid bash -c \"trap \\\"\\\" INT TERM; echo deaf \\$\\$; "
      "while :; do sleep 0.05; done\" & ); while :; do sleep 0.05; done'\n"
      "echo \"job-done $?\"\n"
      "read forever\n");
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(shell.pid()));
  shell.write("go\n");
  pid_t job = 0, deaf = 0;
  for (int i = 0; i < 2; ++i) {
    auto line = shell.read_line();
    REQUIRE(line);
    std::sscanf(line->c_str(), "job %d", &job);
    std::sscanf(line->c_str(), "deaf %d", &deaf);
  }
  REQUIRE(job > 0);
  REQUIRE(deaf > 0);
  spec.group = job;
  spec.root = ::getpid();
  spec.shell = shell.pid();
  StopTimings quick{std::chrono::milliseconds(300), std::chrono::milliseconds(300),
                    std::chrono::milliseconds(2000)};
  StopReport report = run_stop(spec, quick);
  CHECK(report.stopped);
  CHECK(report.remaining.empty());
  REQUIRE(report.signals.size() >= 3);
  CHECK(report.signals[0] == "SIGINT");
  CHECK(report.signals[1] == "SIGTERM");
  CHECK(report.signals[2] == "SIGKILL");
  CHECK_FALSE(alive(job));
  CHECK_FALSE(alive(deaf));
  CHECK(alive(shell.pid()));
  auto done = shell.read_line();
  REQUIRE(done);
  CHECK(*done == "job-done 137");
}

TEST_CASE("job stop: a job with nothing left completes from the loop, no signal sent") {
  ScriptTree shell("set -m\nread forever\n");
  JobSpec spec;
  spec.group = 999999;  // no such group
  spec.root = ::getpid();
  spec.shell = shell.pid();
  spec.started_ticks = dshpty::proc::boot_ticks_now() + 1000000;
  StopReport report = run_stop(spec, StopTimings{});
  CHECK(report.stopped);
  CHECK(report.signals.empty());
  CHECK(report.found.empty());
  CHECK(alive(shell.pid()));
}

TEST_CASE("job stop: a stopped job is continued with SIGTERM, so its handler can run") {
  if (!have_python()) {
    MESSAGE("skipped: no python3");
    return;
  }
  // A default-action SIGINT kills even a stopped process; one that handles SIGTERM (and
  // ignores SIGINT) can only act on it once continued.
  ScriptTree shell(
      "set -m\nread go\n"
      "exec python3 -u -c 'import signal,sys,time,os\n"
      "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
      "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
      "print(\"job\", os.getpid(), flush=True)\n"
      "time.sleep(999)'\n");
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(shell.pid()));
  shell.write("go\n");
  auto line = shell.read_line();
  REQUIRE(line);
  pid_t job = 0;
  std::sscanf(line->c_str(), "job %d", &job);
  REQUIRE(job == shell.pid());  // exec: the script's group is the job's
  REQUIRE(::kill(job, SIGSTOP) == 0);
  spec.group = job;
  spec.root = ::getpid();
  spec.shell = 0;
  StopTimings quick{std::chrono::milliseconds(200), std::chrono::milliseconds(5000),
                    std::chrono::milliseconds(2000)};
  StopReport report = run_stop(spec, quick);
  CHECK(report.stopped);
  CHECK(report.signals == std::vector<std::string>{"SIGINT", "SIGTERM"});
  CHECK_FALSE(alive(job));
}

TEST_CASE("job stop: destroyed mid-way, it calls nothing and leaves nothing watched") {
  ScriptTree shell("set -m\nread go\nbash -c 'trap \"\" INT; echo \"job $$\"; exec sleep 995'\nread forever\n");
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(shell.pid()));
  shell.write("go\n");
  auto line = shell.read_line();
  REQUIRE(line);
  pid_t job = 0;
  std::sscanf(line->c_str(), "job %d", &job);
  REQUIRE(job > 0);
  spec.group = job;
  spec.root = ::getpid();
  spec.shell = shell.pid();
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  bool called = false;
  {
    JobStop stop(loop, spec, StopTimings{}, [&](StopReport) { called = true; });
    CHECK(stop.report().signals == std::vector<std::string>{"SIGINT"});
    ev_run(loop, EVRUN_NOWAIT);
  }
  // Nothing of it is left on the loop: it returns at once with no watcher active.
  CHECK(ev_run(loop, EVRUN_NOWAIT) == 0);
  ev_loop_destroy(loop);
  CHECK_FALSE(called);
  CHECK(alive(job));  // it ignored SIGINT, and nothing else was sent
}

TEST_CASE("job stop: a job forking as fast as it can, children setsid'ing, is stopped whole") {
  ScriptTree shell(
      "set -m\nread go\n"
      "bash -c 'echo \"job $$\"; i=0; while :; do ( setsid bash -c \"sleep 900 & exec sleep 901\" & ); "
      "sleep 902 & i=$((i+1)); [ $i = 30 ] && echo storming; done'\n"
      "echo \"job-done $?\"\nread forever\n");
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(shell.pid()));
  shell.write("go\n");
  auto line = shell.read_line();
  REQUIRE(line);
  pid_t job = 0;
  std::sscanf(line->c_str(), "job %d", &job);
  REQUIRE(job > 0);
  REQUIRE(shell.read_line() == "storming");  // stopped while it still forks
  spec.group = job;
  spec.root = ::getpid();
  spec.shell = shell.pid();
  StopTimings quick{std::chrono::milliseconds(200), std::chrono::milliseconds(200),
                    std::chrono::milliseconds(2000)};
  StopReport report = run_stop(spec, quick);
  CHECK(report.stopped);
  CHECK(report.remaining.empty());
  CHECK(report.found.size() > 60);
  MESSAGE("found " << report.found.size() << " processes; signals " << report.signals.size());
  // Nothing of the job is left below the subreaper: only the shell.
  std::vector<pid_t> below = ScriptTree::everything_below();
  std::size_t others = 0;
  for (pid_t p : below)
    if (p != shell.pid() && alive(p)) ++others;
  CHECK(others == 0);
}

TEST_CASE("job processes: what a command made, not what an earlier one left running or forks later") {
  ScriptTree shell{ScriptTree::Interactive{}};
  REQUIRE(shell.pid() > 0);
  // An earlier `&` job that forks a worker when asked (SIGUSR1), as a preforking server does.
  shell.write("bash -c 'trap \"sleep 995 & echo worker=\\$!\" USR1; echo early=$$; while :; do sleep 0.1; done' &\n");
  pid_t early = std::atoi(until_marker(shell, "early=").c_str());
  REQUIRE(early > 0);
  const std::uint64_t started = tick_after(start_ticks(early));
  // The command: a child, and a double-forked setsid grandchild the subreaper adopts.
  shell.write("bash -c 'echo job=$$; ( setsid bash -c \"echo daemon=\\$\\$; exec sleep 994\" & ); exec sleep 993'\n");
  pid_t job = std::atoi(until_marker(shell, "job=").c_str());
  pid_t daemon = std::atoi(until_marker(shell, "daemon=").c_str());
  REQUIRE(job > 0);
  REQUIRE(daemon > 0);
  REQUIRE(::kill(early, SIGUSR1) == 0);
  pid_t worker = std::atoi(until_marker(shell, "worker=").c_str());
  REQUIRE(worker > 0);
  CHECK(start_ticks(worker) >= started);  // new, but an earlier job's
  const auto own = dshpty::proc::job_processes(::getpid(), shell.pid(), started);
  auto has = [&](pid_t pid) { return std::find(own.begin(), own.end(), pid) != own.end(); };
  CHECK(has(job));
  CHECK(has(daemon));
  CHECK_FALSE(has(early));
  CHECK_FALSE(has(worker));
  CHECK_FALSE(has(shell.pid()));
}

TEST_CASE("job stop: a stopped job that handles SIGINT is continued after it, and acts on it") {
  if (!have_python()) {
    MESSAGE("skipped: no python3");
    return;
  }
  // A server suspended (^Z): python handles SIGINT (KeyboardInterrupt), so the kernel does
  // not end it while it is stopped; it acts on the SIGINT once continued. The wait after
  // SIGINT is long: a stop that did not continue it would need SIGTERM to end it.
  ScriptTree shell(
      "set -m\nread go\n"
      "exec python3 -u -c 'import os,sys,time\n"
      "print(\"job\", os.getpid(), flush=True)\n"
      "try:\n    time.sleep(999)\nexcept KeyboardInterrupt:\n    sys.exit(0)'\n");
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(shell.pid()));
  shell.write("go\n");
  auto line = shell.read_line();
  REQUIRE(line);
  pid_t job = 0;
  std::sscanf(line->c_str(), "job %d", &job);
  REQUIRE(job == shell.pid());
  // SIGSTOP: a ^Z (SIGTSTP) to this orphaned group would be discarded by the kernel.
  REQUIRE(::kill(job, SIGSTOP) == 0);
  while (state_of(job) != 'T') ::poll(nullptr, 0, 1);
  spec.group = job;
  spec.root = ::getpid();
  spec.shell = 0;
  StopTimings slow{std::chrono::milliseconds(30000), std::chrono::milliseconds(2000),
                   std::chrono::milliseconds(2000)};
  StopReport report = run_stop(spec, slow);
  CHECK(report.stopped);
  CHECK(report.signals == std::vector<std::string>{"SIGINT"});
  CHECK_FALSE(alive(job));
}

TEST_CASE("job stop: a running job's own `&` goes with it; an earlier `&` stays") {
  ScriptTree shell{ScriptTree::Interactive{}};
  REQUIRE(shell.pid() > 0);
  shell.write("sleep 979 &\n");
  shell.write("echo \"early=$!\"\n");
  pid_t early = std::atoi(until_marker(shell, "early=").c_str());
  REQUIRE(early > 0);
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(early));
  spec.last_pid = dshpty::proc::newest_pid();
  // The job's line puts a command of its own in the background (its own group, a child of
  // the shell), then waits in the foreground: the job runs.
  shell.write("sleep 978 & echo \"mine=$!\"; bash -c 'echo job=$$; exec sleep 977'\n");
  pid_t mine = std::atoi(until_marker(shell, "mine=").c_str());
  pid_t job = std::atoi(until_marker(shell, "job=").c_str());
  REQUIRE(mine > 0);
  REQUIRE(job > 0);
  CHECK(::getpgid(mine) != job);
  spec.group = job;
  spec.root = ::getpid();
  spec.shell = shell.pid();
  StopReport report = run_stop(spec, StopTimings{});
  CHECK(report.stopped);
  CHECK(report.remaining.empty());
  CHECK(std::find(report.found.begin(), report.found.end(), job) != report.found.end());
  CHECK(std::find(report.found.begin(), report.found.end(), mine) != report.found.end());
  CHECK(std::find(report.found.begin(), report.found.end(), early) == report.found.end());
  CHECK_FALSE(alive(job));
  CHECK_FALSE(alive(mine));
  CHECK(alive(early));
  CHECK(alive(shell.pid()));
}

TEST_CASE("job stop: a running job with no start pid (a far side's stop) leaves an earlier `&` of its first second") {
  ScriptTree shell{ScriptTree::Interactive{}};
  REQUIRE(shell.pid() > 0);
  shell.write("echo \"ready=1\"\n");
  REQUIRE_FALSE(until_marker(shell, "ready=").empty());
  // A far side's start: a second early for the link, no newest pid told. An earlier `&`
  // started inside that second must not be taken for the job's.
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(shell.pid()));
  shell.write("sleep 969 &\n");
  shell.write("echo \"early=$!\"\n");
  pid_t early = std::atoi(until_marker(shell, "early=").c_str());
  REQUIRE(early > 0);
  REQUIRE(start_ticks(early) >= spec.started_ticks);
  shell.write("bash -c 'echo job=$$; exec sleep 968'\n");
  pid_t job = std::atoi(until_marker(shell, "job=").c_str());
  REQUIRE(job > 0);
  spec.group = job;
  spec.root = ::getpid();
  spec.shell = shell.pid();
  StopReport report = run_stop(spec, StopTimings{});
  CHECK(report.stopped);
  CHECK(std::find(report.found.begin(), report.found.end(), job) != report.found.end());
  CHECK(std::find(report.found.begin(), report.found.end(), early) == report.found.end());
  CHECK_FALSE(alive(job));
  CHECK(alive(early));
}

TEST_CASE("job stop: an ended job's leftovers go (its `&`, its daemon); earlier and later ones stay") {
  ScriptTree shell{ScriptTree::Interactive{}};
  REQUIRE(shell.pid() > 0);
  shell.write("sleep 989 &\n");
  shell.write("echo \"early=$!\"\n");
  pid_t early = std::atoi(until_marker(shell, "early=").c_str());
  REQUIRE(early > 0);
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(early));
  // The job's line: a `&` of its own and a daemon that double-forked; then it ended.
  shell.write("sleep 988 & echo \"mine=$!\"; ( setsid bash -c 'echo daemon=$$; exec sleep 987' & )\n");
  pid_t mine = std::atoi(until_marker(shell, "mine=").c_str());
  pid_t daemon = std::atoi(until_marker(shell, "daemon=").c_str());
  REQUIRE(mine > 0);
  REQUIRE(daemon > 0);
  spec.ended_ticks = tick_after(std::max(start_ticks(mine), start_ticks(daemon)));
  // A later command's, started after the job's end: not the job's.
  tick_after(spec.ended_ticks);
  shell.write("sleep 986 &\n");
  shell.write("echo \"late=$!\"\n");
  pid_t late = std::atoi(until_marker(shell, "late=").c_str());
  REQUIRE(late > 0);
  spec.group = 0;  // ended: no group of its own
  spec.root = ::getpid();
  spec.shell = shell.pid();
  StopReport report = run_stop(spec, StopTimings{});
  CHECK(report.stopped);
  CHECK(report.remaining.empty());
  REQUIRE_FALSE(report.signals.empty());
  CHECK(report.signals.front() == "SIGINT");
  CHECK(std::find(report.found.begin(), report.found.end(), mine) != report.found.end());
  CHECK(std::find(report.found.begin(), report.found.end(), daemon) != report.found.end());
  CHECK(std::find(report.found.begin(), report.found.end(), early) == report.found.end());
  CHECK(std::find(report.found.begin(), report.found.end(), late) == report.found.end());
  CHECK_FALSE(alive(mine));
  CHECK_FALSE(alive(daemon));
  CHECK(alive(early));
  CHECK(alive(late));
  CHECK(alive(shell.pid()));
}

TEST_CASE("job stop: an ended job's window ends at the newest pid at its end, in its last tick too") {
  ScriptTree shell{ScriptTree::Interactive{}};
  REQUIRE(shell.pid() > 0);
  shell.write("echo \"ready=1\"\n");
  REQUIRE_FALSE(until_marker(shell, "ready=").empty());
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(shell.pid()));
  spec.last_pid = dshpty::proc::newest_pid();
  // The job started nothing; it ended here. A later command's `&` follows at once: its start
  // is taken as the job's last tick, the case a tick cannot tell and the pid can.
  spec.ended_last_pid = dshpty::proc::newest_pid();
  shell.write("sleep 985 & echo \"late=$!\"\n");
  pid_t late = std::atoi(until_marker(shell, "late=").c_str());
  REQUIRE(late > 0);
  spec.ended_ticks = start_ticks(late);
  spec.group = 0;
  spec.root = ::getpid();
  spec.shell = shell.pid();
  StopReport report = run_stop(spec, StopTimings{});
  CHECK(report.stopped);
  CHECK(report.signals.empty());
  CHECK(std::find(report.found.begin(), report.found.end(), late) == report.found.end());
  CHECK(alive(late));
}

TEST_CASE("job stop: an ended job's daemon that forks after the end and exits leaves its child to the stop") {
  ScriptTree shell{ScriptTree::Interactive{}};
  REQUIRE(shell.pid() > 0);
  char dir[] = "/tmp/dshpty-stop-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string fifo = std::string(dir) + "/go";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  shell.write("echo \"ready=1\"\n");
  REQUIRE_FALSE(until_marker(shell, "ready=").empty());
  JobSpec spec;
  spec.started_ticks = tick_after(start_ticks(shell.pid()));
  spec.last_pid = dshpty::proc::newest_pid();
  // The job's line: a daemon in a session of its own, which forks its real work only once
  // told (after the job ended) and exits, leaving that to the subreaper.
  shell.write("( setsid sh -c 'echo \"dmn=$$\"; read x < " + fifo + "; sleep 984 & echo \"kid=$!\"' & )\n");
  pid_t daemon = std::atoi(until_marker(shell, "dmn=").c_str());
  REQUIRE(daemon > 0);
  spec.ended_ticks = tick_after(start_ticks(daemon));
  spec.ended_last_pid = dshpty::proc::newest_pid();
  tick_after(spec.ended_ticks);
  {
    std::ofstream go(fifo);
    go << "go\n";
  }
  pid_t kid = std::atoi(until_marker(shell, "kid=").c_str());
  REQUIRE(kid > 0);
  while (alive(daemon)) ::poll(nullptr, 0, 5);  // reaped by the fixture's subreaper; the test's guard bounds it
  spec.group = 0;
  spec.root = ::getpid();
  spec.shell = shell.pid();
  StopReport report = run_stop(spec, StopTimings{});
  CHECK(report.stopped);
  CHECK(report.remaining.empty());
  CHECK(std::find(report.found.begin(), report.found.end(), kid) != report.found.end());
  CHECK_FALSE(alive(kid));
  CHECK(alive(shell.pid()));
  ::unlink(fifo.c_str());
  ::rmdir(dir);
}
