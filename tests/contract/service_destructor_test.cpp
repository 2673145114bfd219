// The Service destructor (docs/contract.md, "Service disposal"): an idle service releases its
// sessions without waiting; one destroyed with work in flight aborts the process with a
// message instead of dropping a completion (checked in a forked child).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include "contract_helpers.hpp"

using namespace contract;

TEST_CASE("service destructor: an idle service releases its published sessions without waiting") {
  Loop l;
  auto backend = std::make_shared<ScriptedBackend>(l.loop);
  std::string id;
  {
    Service service(l.loop);
    REQUIRE(service.register_backend(backend).ok());
    Owner o = service.mint_owner("agent");
    Capture<SpawnResult> sp;
    SpawnOptions opts;
    opts.type = "scripted";
    service.spawn(o, opts, sp.cb());
    REQUIRE(run_until(l.loop, [&] { return sp.done(); }));
    REQUIRE(sp.ok());
    id = sp.result()->session.id;
    turn(l.loop);
  }
  CHECK(backend->session(id)->destroyed);
  CHECK(backend->session(id)->close_calls == 0);
  CHECK_FALSE(backend->session(id)->killed_on_destroy.empty());
  CHECK(backend->live_sessions() == 0);
}

TEST_CASE("service destructor: work in flight aborts the process with a message") {
  int err_pipe[2];
  REQUIRE(pipe2(err_pipe, O_CLOEXEC) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child must die of the abort itself, not in doctest's crash reporter.
    std::signal(SIGABRT, SIG_DFL);
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) dup2(devnull, 1);
    dup2(err_pipe[1], 2);
    close(err_pipe[0]);
    struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
    auto backend = std::make_shared<ScriptedBackend>(loop);
    auto gate = ScriptedGate::make();
    backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate)));
    {
      Service service(loop);
      (void)service.register_backend(backend);
      SpawnOptions opts;
      opts.type = "scripted";
      service.spawn(service.mint_owner("agent"), opts, [](Result<SpawnResult>) {});
    }  // must abort here
    _exit(0);
  }
  close(err_pipe[1]);
  std::string err;
  char buf[256];
  ssize_t n;
  while ((n = read(err_pipe[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<std::size_t>(n));
  close(err_pipe[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(err.find("dshpty") != std::string::npos);
}
