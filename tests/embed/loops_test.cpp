// Consumption path 3: a host on libev's default loop that runs its own ev_child and
// ev_signal watchers, and a host on ev_loop_new. Sessions work in both, and the host's own
// children still get their exit statuses: on the default loop libev reaps every child
// (the supervisors too) and the library must not care; on a private loop the host reaps
// its child itself, through a pidfd, and the library must never have reaped it first.
#include <doctest/doctest.h>
#include <ev.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>

#include <dshpty/service.hpp>
#include <dshpty/shell.hpp>

#include "embed_support.hpp"

extern char** environ;

namespace {

// A child of the host that exits with `code` (posix_spawn: no fork of a threaded ASan image).
pid_t spawn_exit(int code) {
  std::string script = "exit " + std::to_string(code);
  const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ);
  REQUIRE(rc == 0);
  return pid;
}

// One session's life, driven by callbacks as a host would: spawn, one send, kill.
struct SessionRun {
  dshpty::Service& service;
  dshpty::Owner owner;
  std::optional<dshpty::SessionSnapshot> session;
  dshpty::Error error;
  std::string viewport;
  bool sent = false;
  bool closed = false;
  bool finished = false;

  SessionRun(dshpty::Service& s, dshpty::Owner o) : service(s), owner(std::move(o)) {
    service.spawn(owner, {.type = "shell", .name = "main"}, [this](auto opened) {
      if (!opened) return fail(opened.error());
      session = opened->session;
      auto started = service.start_send(owner, session->id, {.text = "echo embed-$((6*7))"},
                                        [this](dshpty::Result<dshpty::SendResult> result) {
        if (!result) return fail(result.error());
        sent = true;
        viewport = result->viewport;
        kill();
      });
      if (!started) fail(started.error());
    });
  }

  void kill() {
    auto started = service.kill(owner, session->id, [this](dshpty::Result<bool> killed) {
      if (!killed) return fail(killed.error());
      closed = *killed;
      finished = true;
    });
    if (!started) fail(started.error());
  }
  void fail(dshpty::Error e) {
    error = std::move(e);
    finished = true;
  }

  void check() const {
    INFO("session error: " << (error ? dshpty::describe(error) : std::string("none")));
    CHECK(!error);
    REQUIRE(session.has_value());
    CHECK(session->pid.has_value());
    CHECK(sent);
    CHECK(viewport.find("embed-42") != std::string::npos);
    CHECK(closed);
  }
};

// What every case tears down, pass or fail: the service (disposed, then swept of marked
// processes) and any child of ours not yet reaped.
struct Host {
  struct ev_loop* loop;
  std::string marker = embed::fresh_marker("loops");
  dshpty::Service service{loop};
  std::vector<pid_t> children;

  explicit Host(struct ev_loop* l) : loop(l) {
    REQUIRE(service.register_backend(dshpty::make_shell_backend(loop, embed::marked_config(marker))));
  }
  ~Host() {
    (void)embed::dispose_and_sweep(service, loop, marker);
    for (pid_t pid : children) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);  // ECHILD when libev reaped it already: fine
    }
  }
};

}  // namespace

TEST_CASE("default loop: a session works beside the host's own ev_child and ev_signal") {
  struct ev_loop* loop = ev_default_loop(0);
  REQUIRE(loop != nullptr);
  Host host(loop);

  struct ChildWatch {
    ev_child watcher;
    std::optional<int> status;
  };
  auto on_child = [](struct ev_loop*, ev_child* w, int) {
    reinterpret_cast<ChildWatch*>(w)->status = w->rstatus;
  };
  struct SignalWatch {
    ev_signal watcher;
    int count = 0;
  } usr1;
  ev_signal_init(&usr1.watcher, [](struct ev_loop*, ev_signal* w, int) {
    ++reinterpret_cast<SignalWatch*>(w)->count;
  }, SIGUSR1);
  ev_signal_start(loop, &usr1.watcher);
  ChildWatch before{}, during{};
  embed::Defer stop([&] {
    ev_child_stop(loop, &before.watcher);
    ev_child_stop(loop, &during.watcher);
    ev_signal_stop(loop, &usr1.watcher);
  });

  // One child before the session exists, one while it runs.
  host.children.push_back(spawn_exit(7));
  ev_child_init(&before.watcher, on_child, host.children.back(), 0);
  ev_child_start(loop, &before.watcher);

  dshpty::Owner agent = host.service.mint_owner("default-loop");
  SessionRun run(host.service, agent);
  REQUIRE(embed::run_until(loop, [&] { return run.session.has_value() || run.finished; }));

  host.children.push_back(spawn_exit(9));
  ev_child_init(&during.watcher, on_child, host.children.back(), 0);
  ev_child_start(loop, &during.watcher);
  REQUIRE(::kill(::getpid(), SIGUSR1) == 0);

  CHECK(embed::run_until(loop, [&] {
    return run.finished && before.status && during.status && usr1.count > 0;
  }));

  run.check();
  REQUIRE(before.status.has_value());
  REQUIRE(during.status.has_value());
  CHECK(WIFEXITED(*before.status));
  CHECK(WEXITSTATUS(*before.status) == 7);
  CHECK(WIFEXITED(*during.status));
  CHECK(WEXITSTATUS(*during.status) == 9);
  CHECK(usr1.count == 1);
  CHECK(embed::marked_processes(host.marker).empty());
  host.children.clear();  // libev reaped them
}

TEST_CASE("ev_loop_new: a session works, and the host's own child is still the host's to reap") {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  REQUIRE(loop != nullptr);
  struct LoopGuard {
    struct ev_loop* loop;
    ~LoopGuard() { ev_loop_destroy(loop); }
  } guard{loop};
  Host host(loop);

  // The host's own child, watched the way the library watches its helpers: a pidfd.
  struct PidfdWatch {
    ev_io watcher;
    bool readable = false;
  } exited;
  pid_t child = spawn_exit(5);
  host.children.push_back(child);
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));  // glibc 2.36's wrapper lacks extern "C"
  REQUIRE(pidfd >= 0);
  ev_io_init(&exited.watcher, [](struct ev_loop* l, ev_io* w, int) {
    reinterpret_cast<PidfdWatch*>(w)->readable = true;
    ev_io_stop(l, w);
  }, pidfd, EV_READ);
  ev_io_start(loop, &exited.watcher);

  // A signal watcher on a non-default loop, too (libev allows one loop per signal).
  struct SignalWatch {
    ev_signal watcher;
    int count = 0;
  } usr2;
  ev_signal_init(&usr2.watcher, [](struct ev_loop*, ev_signal* w, int) {
    ++reinterpret_cast<SignalWatch*>(w)->count;
  }, SIGUSR2);
  ev_signal_start(loop, &usr2.watcher);
  embed::Defer stop([&] {
    ev_io_stop(loop, &exited.watcher);
    ev_signal_stop(loop, &usr2.watcher);
  });

  dshpty::Owner agent = host.service.mint_owner("new-loop");
  SessionRun run(host.service, agent);
  REQUIRE(embed::run_until(loop, [&] { return run.session.has_value() || run.finished; }));
  REQUIRE(::kill(::getpid(), SIGUSR2) == 0);
  CHECK(embed::run_until(loop, [&] { return run.finished && exited.readable && usr2.count > 0; }));

  run.check();
  // Nobody but us reaped it: the status is still waiting for us.
  siginfo_t info{};
  REQUIRE(::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED) == 0);
  ::close(pidfd);
  host.children.clear();
  CHECK(info.si_code == CLD_EXITED);
  CHECK(info.si_status == 5);
  CHECK(usr2.count == 1);
  CHECK(embed::marked_processes(host.marker).empty());
}
