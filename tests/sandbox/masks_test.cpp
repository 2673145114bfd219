// A host socket that vanishes while a confined session starts (its server exited between the
// listing of the host's sockets and bwrap's mounts) neither fails the spawn nor leaves a file
// where it was; a socket present the whole time is still covered (docs/security.md,
// "Sockets that appear or vanish around a spawn"). The vanishing is made at a fixed moment
// by a bwrap that removes the socket before it runs the real one, and at random moments by
// a process binding and removing sockets in a loop while spawns run.
#include <doctest/doctest.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sandbox_support.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof addr.sun_path);
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  return addr;
}

// A unix listener of the host at `path`, open until this goes: /proc/net/unix lists it,
// after its file is removed too.
class HostSocket {
 public:
  explicit HostSocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un addr = unix_address(path);
    REQUIRE(fd_ >= 0);
    REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
  }
  ~HostSocket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  HostSocket(const HostSocket&) = delete;
  HostSocket& operator=(const HostSocket&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

bool host_connects(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_un addr = unix_address(path);
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string real_bwrap() {
  std::istringstream dirs(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/bwrap").c_str(), X_OK) == 0) return dir + "/bwrap";
  }
  FAIL("bwrap is not on PATH");
  return {};
}

// A bwrap for the backend that runs `before` (sh, with $n its run's number, from 1) and then
// the real one.
std::string wrapped_bwrap(const ScratchDir& dir, const std::string& before) {
  const std::string script = dir.path() + "/bwrap-wrapper";
  std::ofstream(script) << "#!/bin/sh\n"
                        << "echo run >> " << dir.path() << "/runs\n"
                        << "n=$(wc -l < " << dir.path() << "/runs)\n"
                        << before << "\n"
                        << "exec " << real_bwrap() << " \"$@\"\n";
  REQUIRE(::chmod(script.c_str(), 0755) == 0);
  return script;
}

int runs_of(const ScratchDir& dir) {
  std::ifstream in(dir.path() + "/runs");
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// connect() to `path` inside the session: "ok" or the errno's name.
std::string connect_inside(ShellFixture& fx, BackendSession& s, const std::string& path) {
  const Ran r = run(fx, s, "/usr/bin/python3 -c 'import socket,errno,sys\ntry:\n"
                           " socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print(\"CONNECT=ok\")\n"
                           "except OSError as e: print(\"CONNECT=\" + errno.errorcode[e.errno])' " + path);
  const auto at = r.output.rfind("CONNECT=");
  REQUIRE_MESSAGE(at != std::string::npos, r.output);
  return r.output.substr(at + 8, r.output.find_first_of("\r\n", at) - at - 8);
}

std::string exists_inside(ShellFixture& fx, BackendSession& s, const std::string& path) {
  const Ran r = run(fx, s, "test -e " + path + " && echo THERE=yes || echo THERE=no");
  const auto at = r.output.rfind("THERE=");
  REQUIRE_MESSAGE(at != std::string::npos, r.output);
  return r.output.substr(at + 6, r.output.find_first_of("\r\n", at) - at - 6);
}

}  // namespace

TEST_CASE("a masked socket gone before bwrap's mount, in a read-only directory: bwrap starts again, the spawn succeeds") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws"), ro = scratch.sub("ro");
  HostSocket steady(ro + "/steady.sock");
  HostSocket leaving(ro + "/leaving.sock");
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  config.bwrap_path = wrapped_bwrap(scratch, "rm -f " + ro + "/leaving.sock");
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(runs_of(scratch) == 2);  // the first could not make the mount point
  CHECK(connect_inside(fx, *s.session, ro + "/steady.sock") == "ECONNREFUSED");
  CHECK(host_connects(ro + "/steady.sock"));  // the control: the host's answer
  CHECK(fx.close(*s.session));
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("a masked socket gone before bwrap's mount, in the workspace: no file is left where it was") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  HostSocket steady(ws + "/steady.sock");
  HostSocket leaving(ws + "/leaving.sock");
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  config.bwrap_path = wrapped_bwrap(scratch, "rm -f " + ws + "/leaving.sock");
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(runs_of(scratch) == 1);
  // bwrap made its mount point through the workspace's bind, on the host; removed from the
  // host once the session started, which detaches the mount over it inside too.
  CHECK_FALSE(exists(ws + "/leaving.sock"));
  CHECK(exists_inside(fx, *s.session, ws + "/leaving.sock") == "no");
  CHECK(connect_inside(fx, *s.session, ws + "/steady.sock") == "ECONNREFUSED");
  CHECK(host_connects(ws + "/steady.sock"));
  CHECK(fx.close(*s.session));
  CHECK_FALSE(exists(ws + "/leaving.sock"));
}

TEST_CASE("a socket gone at every start: bwrap is started again a few times, then its words are the spawn's failure") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws"), ro = scratch.sub("ro");
  std::vector<std::unique_ptr<HostSocket>> sockets;
  for (int i = 1; i <= 8; ++i) sockets.push_back(std::make_unique<HostSocket>(ro + "/s" + std::to_string(i)));
  ShellFixture fx;
  auto config = sandbox_config(fx, SandboxMode::workspace_write);
  config.bwrap_path = wrapped_bwrap(scratch, "rm -f " + ro + "/s$n");
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(s.session);
  CHECK(s.error->code == Code::BACKEND_FAILED);
  CHECK_MESSAGE(contains(describe(s.error), "Can't create file at " + ro + "/s4"), describe(s.error));
  CHECK(runs_of(scratch) == 4);
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  CHECK(zombie_children().empty());
}

TEST_CASE("a wrapper failure that names no socket gone is the spawn's failure at once") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws"), ro = scratch.sub("ro");
  HostSocket leaving(ro + "/leaving.sock");
  ShellFixture fx;
  auto config = sandbox_config(fx, SandboxMode::workspace_write);
  config.bwrap_path = wrapped_bwrap(scratch, "rm -f " + ro + "/leaving.sock\necho 'bwrap: something else' >&2\nexit 1");
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(s.session);
  CHECK_MESSAGE(contains(describe(s.error), "(exit status 1): bwrap: something else"), describe(s.error));
  CHECK(runs_of(scratch) == 1);
}

namespace {

// A process binding sockets at `paths` and removing them again, in a loop, until stop():
// a server that comes and goes (bind fails while something else holds the path).
class SocketChurn {
 public:
  explicit SocketChurn(std::vector<std::string> paths) {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(fds[1]);
      churn(paths, fds[0]);
    }
    ::close(fds[0]);
    stop_ = fds[1];
  }
  ~SocketChurn() { stop(); }
  SocketChurn(const SocketChurn&) = delete;
  SocketChurn& operator=(const SocketChurn&) = delete;
  // Ends the loop after its cycle (the sockets removed); the cycles run.
  int stop() {
    if (pid_ > 0) {
      ::close(stop_);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
      cycles_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    return cycles_;
  }

 private:
  [[noreturn]] static void churn(const std::vector<std::string>& paths, int stop) {
    pollfd p{stop, POLLIN, 0};
    int cycles = 0;
    while (::poll(&p, 1, 0) == 0) {
      std::vector<int> fds;
      std::vector<const std::string*> bound;
      for (const auto& path : paths) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, path.c_str(), path.size());
        if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) bound.push_back(&path);
        fds.push_back(fd);
      }
      // Present for a moment, absent for longer: pacing, so that a start sees a socket
      // vanish now and then, and a few starts in a row seldom all do.
      const timespec present{0, 1'000'000}, absent{0, 20'000'000};
      ::nanosleep(&present, nullptr);
      for (int fd : fds) ::close(fd);
      for (const auto* path : bound) ::unlink(path->c_str());
      ::nanosleep(&absent, nullptr);
      cycles = std::min(cycles + 1, 255);
    }
    ::_exit(cycles);
  }

  pid_t pid_ = -1;
  int stop_ = -1;
  int cycles_ = 0;
};

}  // namespace

TEST_CASE("sockets made and removed in a loop while confined spawns run: every spawn succeeds, no file is left") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws"), ro = scratch.sub("ro");
  HostSocket steady(ws + "/steady.sock");
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  auto backend = make_shell_backend(fx.loop(), config);
  constexpr int kSpawns = 16;
  std::vector<Spawned> spawned(kSpawns);
  int done = 0;
  {
    SocketChurn churn({ro + "/churn.sock", ws + "/churn.sock"});
    for (int i = 0; i < kSpawns; ++i) {
      SpawnSpec spec;
      spec.session_id = fresh_marker("pty");
      spec.request = in_dir(ws);
      backend->spawn(std::move(spec), [&, i](Result<std::unique_ptr<BackendSession>> r) {
        ++done;
        if (r) {
          spawned[i].session = std::move(r.value());
        } else {
          spawned[i].error = r.error();
        }
      });
    }
    REQUIRE(run_until(fx.loop(), [&] { return done == kSpawns; }, std::chrono::minutes(3)));
    for (auto& s : spawned) fx.remember(s);
    CHECK(churn.stop() > 0);
  }
  for (auto& s : spawned) {
    CHECK_MESSAGE(s.session, describe(s.error));
  }
  // bwrap's mount points are gone with the sessions' start; the loop removed its own.
  CHECK_FALSE(exists(ws + "/churn.sock"));
  CHECK_FALSE(exists(ro + "/churn.sock"));
  if (spawned.front().session) CHECK(connect_inside(fx, *spawned.front().session, ws + "/steady.sock") == "ECONNREFUSED");
  for (auto& s : spawned) {
    if (s.session) CHECK(fx.close(*s.session));
  }
  CHECK_FALSE(exists(ws + "/churn.sock"));
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}
