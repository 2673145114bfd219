// A confined session behaves as an unconfined one towards its host: host pids (snapshot,
// foreground group, signals), exact stdin_read through the host's /proc walk, exit
// statuses, and a close that leaves nothing.
#include <doctest/doctest.h>
#include <signal.h>

#include <cstring>
#include <fstream>

#include "proc/ns_pid.hpp"
#include "proc/procfs.hpp"
#include "sandbox_support.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

std::string comm_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/comm");
  std::string c;
  std::getline(f, c);
  return c;
}

Spawned spawn_confined(ShellFixture& fx, const ScratchDir& scratch,
                       SandboxMode mode = SandboxMode::workspace_write) {
  SpawnRequest r;
  r.cwd = scratch.path();
  return fx.spawn(sandbox_config(fx, mode), r);
}

}  // namespace

TEST_CASE("the snapshot's pid and the foreground group are the host's pids") {
  ScratchDir scratch;
  ShellFixture fx;
  auto s = spawn_confined(fx, scratch);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  REQUIRE(s.session->pid());
  pid_t shell = *s.session->pid();
  // The host's number for a process that its own namespace numbers differently.
  pid_t inner = 0;
  int levels = 0;
  REQUIRE(proc::innermost_pid(shell, inner, levels));
  CHECK(levels == 2);
  CHECK(inner != shell);
  CHECK(comm_of(shell) == "bash");
  CHECK(foreground_pgid(shell) == shell);
  // The shell's parent is the supervisor as the namespace's init, and its parent the
  // process whose pidfd the host watches (the outer bwrap): nothing between them that
  // could outlive what the host takes as the end of the namespace.
  procfs::Stat shell_stat, supervisor_stat;
  REQUIRE(procfs::read_stat(shell, shell_stat));
  REQUIRE(proc::innermost_pid(shell_stat.ppid, inner, levels));
  CHECK(inner == 1);
  CHECK(comm_of(shell_stat.ppid) == "dshpty-supervis");
  REQUIRE(procfs::read_stat(shell_stat.ppid, supervisor_stat));
  CHECK(supervisor_stat.ppid == s.shell()->helper_pid());
  REQUIRE(proc::innermost_pid(shell, inner, levels));
  // What the shell calls itself is the namespace's number.
  auto r = fx.send(*s.session, "echo \"inner=$$\"");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "inner=" + std::to_string(inner) + "\n"), show(r));
  CHECK(r->exit_code == 0);
  CHECK(r->cwd == scratch.path());
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  CHECK(zombie_children().empty());
}

TEST_CASE("the shell holds only the terminal; the host's fds are back after close") {
  ScratchDir scratch;
  ShellFixture fx;
  int before = count_open_fds();
  auto s = spawn_confined(fx, scratch, SandboxMode::read_only);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // No socket: the control socket stays with the supervisor.
  auto r = fx.send(*s.session, "echo sockets=$(ls -l /proc/$$/fd | grep -c socket)");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "\nsockets=0\n"), show(r));
  // ttyname() finds the terminal: bwrap's name for it, as for an inherited one.
  r = fx.send(*s.session, "tty");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "\n/dev/console\n"), show(r));
  // Job control: the shell has the terminal, and a job is listed.
  r = fx.send(*s.session, "set -o | grep ^monitor; sleep 30 & jobs; kill %1");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "monitor        \ton"), show(r));
  CHECK_MESSAGE(contains(r->viewport, "Running"), show(r));
  CHECK(fx.close(*s.session).ok());
  s.session.reset();
  CHECK(count_open_fds() == before);
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("read and python3 input() complete as stdin_read") {
  ScratchDir scratch;
  ShellFixture fx;
  auto s = spawn_confined(fx, scratch, SandboxMode::read_only);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // With a 30 s idle, only stdin evidence can complete these.
  for (const char* reader : {"read x", "python3 -c 'input()'"}) {
    CAPTURE(reader);
    auto r = fx.send(*s.session, request(reader, 30s, 60s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
    CHECK_FALSE(r->exit_code.has_value());  // not at the shell's prompt
    r = fx.send(*s.session, request("line", 30s, 60s));
    REQUIRE_MESSAGE(r, show(r));
    CHECK(r->wait_reason == WaitReason::stdin_read);
    CHECK(r->exit_code == 0);
  }
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("signals reach the foreground group by its host pid; exit statuses are the shell's") {
  ScratchDir scratch;
  ShellFixture fx;
  auto s = spawn_confined(fx, scratch);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, request("sleep 60", 300ms));
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->wait_reason == WaitReason::inferred_idle);
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 1; }));
  pid_t sleeper = marked_processes_named(fx.marker(), "sleep").front();
  REQUIRE(run_until(fx.loop(), [&] { return foreground_pgid(*s.session->pid()) == sleeper; }));
  std::optional<SignalResult> delivered;
  REQUIRE(s.session->signal(Signal::sigterm, [&](Result<SignalResult> res) {
    REQUIRE(res);
    delivered = *res;
  }).ok());
  REQUIRE(run_until(fx.loop(), [&] { return delivered.has_value(); }));
  CHECK(delivered->target_pgid == sleeper);
  r = fx.send(*s.session, "echo \"status=$?\"");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "status=143"), show(r));
  // SIGKILL to the shell's own group is refused, by its host pid.
  Status refused = s.session->signal(Signal::sigkill, [](Result<SignalResult>) {
    FAIL("a refused signal must not complete");
  });
  CHECK_FALSE(refused.ok());

  fx.type(*s.session, "exit 3");
  REQUIRE(run_until(fx.loop(), [&] { return !s.session->status().running(); }));
  CHECK(s.session->status() == SessionStatus::exited_with_code(3));
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  CHECK(zombie_children().empty());
}

TEST_CASE("kill -9 $$ inside gives signal SIGKILL") {
  ScratchDir scratch;
  ShellFixture fx;
  auto s = spawn_confined(fx, scratch);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  fx.type(*s.session, "kill -9 $$");
  REQUIRE(run_until(fx.loop(), [&] { return !s.session->status().running(); }));
  CHECK(s.session->status() == SessionStatus::exited_by_signal(SIGKILL));
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  CHECK(zombie_children().empty());
}
