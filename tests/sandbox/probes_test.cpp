// The probe battery (docs/security.md, "Probes"): each probe is a real program run in a
// real confined session, its exact outcome asserted, beside a positive control that shows
// the same program succeeding where the confinement does not apply (an unconfined session,
// a socket passed in with allow_sockets). A probe that gets through is a failure, never a
// skip. The same program runs as root and, through run_unprivileged.sh, as an ordinary user.
#include <doctest/doctest.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sandbox_support.hpp"

using namespace dshpty;
using namespace dshpty::test;

extern char** environ;

namespace {

// The system's python (a user's own python may sit in a home the probe user cannot read).
const std::string kPython = "/usr/bin/python3";

// The probe as a confined session sees it. A checkout under /tmp (a CI clone there) is
// inside what the sandbox hides, so the probe is copied out to a scratch directory the
// sessions can read (ScratchDir's rule for /tmp), once per run.
std::string probe_program() {
  const char* path = std::getenv("DSHPTY_SANDBOX_PROBE");
  if (!path || !*path) throw std::runtime_error("DSHPTY_SANDBOX_PROBE is not set");
  const std::string source = path;
  if (source.rfind("/tmp/", 0) != 0) return source;
  static ScratchDir visible;
  static const std::string copy = [&] {
    const std::string target = visible.path() + "/probe.py";
    std::filesystem::copy_file(source, target, std::filesystem::copy_options::overwrite_existing);
    ::chmod(visible.path().c_str(), 0755);  // the unprivileged probe user reads it too
    ::chmod(target.c_str(), 0644);
    return target;
  }();
  return copy;
}

// The probe's own line, "NAME ok DETAIL" or "NAME err ERRNO", from a send's output.
std::string probe(ShellFixture& fx, BackendSession& s, const std::string& args, const std::string& prefix = "") {
  auto r = fx.send(s, prefix + kPython + " " + probe_program() + " " + args);
  REQUIRE_MESSAGE(r, show(r));
  std::istringstream lines(r->viewport);
  std::string line;
  while (std::getline(lines, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.rfind("PROBE ", 0) == 0) return line.substr(6);
  }
  FAIL("no probe line in: " << r->viewport);
  return {};
}

int system_quiet(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

// The host side: a probe.py serve process with unix listeners (paths and an abstract
// name), a TCP listener and a UDP resolver on the host's loopback, each answering.
class HostServices {
 public:
  HostServices(const std::vector<std::string>& unix_paths, const std::string& abstract) {
    std::vector<std::string> args = {kPython, probe_program(), "serve"};
    for (const auto& p : unix_paths) args.insert(args.end(), {"--unix", p});
    args.insert(args.end(), {"--abstract", abstract});
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) < 0 || ::pipe2(out, O_CLOEXEC) < 0) throw std::runtime_error("pipes");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = ::posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    if (rc != 0) throw std::runtime_error("cannot start the probe server");
    std::FILE* f = ::fdopen(out[0], "r");
    char line[128] = "";
    if (!std::fgets(line, sizeof line, f) || std::sscanf(line, "READY %d %d", &tcp_, &udp_) != 2) {
      std::fclose(f);
      throw std::runtime_error("the probe server did not start");
    }
    std::fclose(f);
  }
  ~HostServices() {
    ::close(stdin_);  // it returns at EOF
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  int tcp_port() const { return tcp_; }
  int udp_port() const { return udp_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int tcp_ = 0;
  int udp_ = 0;
};

// A directory of the host's /run for a socket (root may make one; an unprivileged run is
// given one by run_unprivileged.sh).
std::string run_dir() {
  if (const char* dir = std::getenv("DSHPTY_PROBE_RUN_DIR"); dir && *dir) return dir;
  return "/run";
}

struct Battery {
  ScratchDir scratch;
  std::string ws = scratch.sub("ws");
  std::string control_ws = scratch.sub("control-ws");
  std::string outside = scratch.sub("outside");
  std::string home = scratch.sub("home");
  std::string xdg = scratch.sub("xdg");
  std::string tag = std::to_string(::getpid());
  std::string run_sock = run_dir() + "/dshpty-probe-" + tag + ".sock";
  std::string xdg_sock = xdg + "/bus";
  std::string home_sock = home + "/agent.sock";
  std::string abstract = "dshpty-probe-" + tag;
  std::optional<HostServices> services;

  Battery() {
    ::setenv("XDG_RUNTIME_DIR", xdg.c_str(), 1);  // what a desktop session would have
    for (const auto& w : {ws, control_ws}) REQUIRE(system_quiet("git init -q " + w) == 0);
    services.emplace(std::vector<std::string>{run_sock, xdg_sock, home_sock}, abstract);
  }
  ~Battery() {
    services.reset();
    ::unlink(run_sock.c_str());
    ::unsetenv("XDG_RUNTIME_DIR");
  }
};

}  // namespace

TEST_CASE("probe battery: workspace-write, network off, beside an unconfined session") {
  Battery b;
  ShellFixture confined_fx;
  auto config = patient(sandbox_config(confined_fx, SandboxMode::workspace_write));
  auto confined = confined_fx.spawn(config, in_dir(b.ws));
  REQUIRE_MESSAGE(confined.session, describe(confined.error));
  ShellFixture control_fx;
  auto control = control_fx.spawn(patient(control_fx.config()), in_dir(b.control_ws));
  REQUIRE_MESSAGE(control.session, describe(control.error));
  auto& in = *confined.session;
  auto& out = *control.session;
  const std::string answer = "ok HOST-ANSWER";

  SUBCASE("the filter is on: Seccomp 2, no_new_privs") {
    CHECK(contains(run(confined_fx, in, "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status").output,
                   "NoNewPrivs:\t1\nSeccomp:\t2"));
    CHECK(contains(run(control_fx, out, "grep -E '^Seccomp:' /proc/self/status").output, "Seccomp:\t0"));
  }
  SUBCASE("host sockets under /run, $XDG_RUNTIME_DIR and the home directory") {
    CHECK(probe(confined_fx, in, "connect-unix " + b.run_sock) == "connect-unix err ENOENT");
    CHECK(probe(control_fx, out, "connect-unix " + b.run_sock) == "connect-unix " + answer);
    CHECK(probe(confined_fx, in, "connect-unix " + b.xdg_sock) == "connect-unix err ENOENT");
    CHECK(probe(control_fx, out, "connect-unix " + b.xdg_sock) == "connect-unix " + answer);
    CHECK(probe(confined_fx, in, "connect-unix " + b.home_sock) == "connect-unix err ECONNREFUSED");
    CHECK(probe(control_fx, out, "connect-unix " + b.home_sock) == "connect-unix " + answer);
    auto r = run(confined_fx, in, "echo $(ls -A /run | wc -l)-$(ls -A " + b.xdg + " | wc -l)");
    CHECK_MESSAGE(contains(r.output, "\n0-0\n"), r.output);  // both empty inside
  }
  SUBCASE("abstract and TCP listeners on the host's loopback, and its resolver") {
    CHECK(probe(confined_fx, in, "connect-abstract " + b.abstract) == "connect-abstract err ECONNREFUSED");
    CHECK(probe(control_fx, out, "connect-abstract " + b.abstract) == "connect-abstract " + answer);
    const std::string tcp = std::to_string(b.services->tcp_port());
    CHECK(probe(confined_fx, in, "connect-tcp " + tcp) == "connect-tcp err ECONNREFUSED");
    CHECK(probe(control_fx, out, "connect-tcp " + tcp) == "connect-tcp " + answer);
    const std::string udp = std::to_string(b.services->udp_port());
    CHECK(probe(confined_fx, in, "dns " + udp) == "dns err ECONNREFUSED");
    CHECK(probe(control_fx, out, "dns " + udp) == "dns ok answered");
  }
  SUBCASE(".git: hooks and config are read-only, the directory itself cannot be moved") {
    auto r = run(confined_fx, in, "echo x > .git/hooks/pre-commit");
    CHECK_MESSAGE(contains(r.output, ".git/hooks/pre-commit: Read-only file system"), r.output);
    CHECK(r.exit_code == 1);
    CHECK(run(control_fx, out, "echo x > .git/hooks/pre-commit").exit_code == 0);
    // git's config.lock is made in the writable .git, then cannot be renamed over config.
    r = run(confined_fx, in, "git config core.hooksPath /tmp/h");
    CHECK_MESSAGE(contains(r.output, "could not write config file .git/config: Device or resource busy"), r.output);
    CHECK(r.exit_code == 4);
    CHECK(run(control_fx, out, "git config core.hooksPath /tmp/h").exit_code == 0);
    r = run(confined_fx, in, "mv .git moved-git");
    CHECK_MESSAGE(contains(r.output, "Device or resource busy"), r.output);
    CHECK(run(control_fx, out, "mv .git moved-git && mv moved-git .git").exit_code == 0);
    // The rest of the workspace stays writable.
    CHECK(run(confined_fx, in, "echo x > work.txt").exit_code == 0);
    struct stat st {};
    CHECK(::stat((b.ws + "/.git/hooks/pre-commit").c_str(), &st) < 0);
    CHECK(::stat((b.ws + "/work.txt").c_str(), &st) == 0);
  }
  SUBCASE("namespaces, mounts, keyrings, io_uring, perf-like surfaces") {
    auto r = run(confined_fx, in, "unshare -Ur true");
    CHECK_MESSAGE(contains(r.output, "unshare: unshare failed: Operation not permitted"), r.output);
    CHECK(r.exit_code == 1);
    CHECK(run(control_fx, out, "unshare -Ur true").exit_code == 0);
    CHECK(probe(confined_fx, in, "mount " + b.ws) == "mount err EPERM");
    // The control mounts in a user and mount namespace of its own: nothing on the host.
    CHECK(probe(control_fx, out, "mount " + b.control_ws, "unshare -rm ") == "mount ok");
    CHECK(probe(confined_fx, in, "fsopen") == "fsopen err ENOSYS");
    CHECK(probe(control_fx, out, "fsopen") != "fsopen err ENOSYS");  // EPERM unprivileged
    CHECK(probe(confined_fx, in, "clone3") == "clone3 err ENOSYS");
    CHECK(probe(control_fx, out, "clone3") == "clone3 err EINVAL");  // reached the kernel
    CHECK(probe(confined_fx, in, "keyctl") == "keyctl err EPERM");
    CHECK(probe(control_fx, out, "keyctl") == "keyctl ok");
    CHECK(probe(confined_fx, in, "io_uring") == "io_uring_setup err EPERM");
    CHECK(probe(control_fx, out, "io_uring") == "io_uring_setup ok");
    CHECK(probe(confined_fx, in, "personality") == "personality err EPERM");
    CHECK(probe(control_fx, out, "personality") == "personality ok");
  }
  SUBCASE("the 64-bit TIOCSTI, AF_VSOCK") {
    CHECK(probe(confined_fx, in, "tiocsti") == "tiocsti err EPERM");
    CHECK(probe(control_fx, out, "tiocsti") == "tiocsti ok injected");
    CHECK(probe(confined_fx, in, "vsock") == "socket-40 err EAFNOSUPPORT");
    CHECK(probe(control_fx, out, "vsock") == "socket-40 ok");
  }
  SUBCASE("no extra fds; host pids unseen") {
    CHECK(probe(confined_fx, in, "fds") == "fds ok 0,1,2");
    CHECK(probe(confined_fx, in, "fds", "exec 7</dev/null; ") == "fds ok 0,1,2,7");  // it sees fds
    const std::string host_pid = std::to_string(::getpid());
    CHECK(probe(confined_fx, in, "kill " + host_pid) == "kill err ESRCH");
    CHECK(probe(control_fx, out, "kill " + host_pid) == "kill ok");
  }
  SUBCASE("the helper's fds: pidfd_getfd on the namespace's init refused, on a process of its own taken") {
    // The helper (pid 1 inside) is non-dumpable and nothing inside has CAP_SYS_PTRACE: its
    // control socket (fd 3) cannot be taken to forge "exited" or swallow "kill".
    CHECK(probe(confined_fx, in, "getfd 1 3") == "pidfd_getfd err EPERM");
    // Positive control: the same call against a dumpable process of the session's own.
    CHECK(probe(confined_fx, in, "getfd $! 0", "sleep 300 </dev/null & ") == "pidfd_getfd ok");
  }
  SUBCASE("writes outside the roots") {
    CHECK(probe(confined_fx, in, "write " + b.outside + "/f") == "write err EROFS");
    CHECK(probe(control_fx, out, "write " + b.outside + "/g") == "write ok");
    CHECK(probe(confined_fx, in, "write " + b.ws + "/f") == "write ok");
  }
  SUBCASE("setsid and nohup survivors are gone after close") {
    // Both running (inside, where pgrep sees only the sandbox's processes), then seen by the
    // host: the positive control that there was something to kill.
    auto r = run(confined_fx, in, "setsid nohup sleep 300 >/dev/null 2>&1 & nohup sleep 301 >/dev/null 2>&1 & "
                                  "until [ \"$(pgrep -cx sleep)\" = 2 ]; do :; done; echo BOTH-RUNNING");
    CHECK_MESSAGE(contains(r.output, "\nBOTH-RUNNING"), r.output);
    CHECK(marked_processes_named(confined_fx.marker(), "sleep").size() == 2);
    CHECK(confined_fx.close(in).ok());
    CHECK_MESSAGE(left_behind(confined_fx.marker()).empty(), left_behind(confined_fx.marker()));
  }
  CHECK(control_fx.close(out).ok());
  (void)confined_fx.close(in);
  CHECK_MESSAGE(left_behind(confined_fx.marker()).empty(), left_behind(confined_fx.marker()));
  CHECK(zombie_children().empty());
}

TEST_CASE("allow_sockets: the sockets passed in are reached, nothing else of the host") {
  Battery b;
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  config.allow_sockets = {b.run_sock, b.xdg_sock, b.home_sock};
  auto s = fx.spawn(config, in_dir(b.ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  for (const auto& sock : {b.run_sock, b.xdg_sock, b.home_sock}) {
    CAPTURE(sock);
    CHECK(probe(fx, *s.session, "connect-unix " + sock) == "connect-unix ok HOST-ANSWER");
  }
  // Only those: /run holds nothing else (the socket, or the directory it was made in).
  const std::string entry = run_dir() == "/run" ? "dshpty-probe-" + b.tag + ".sock" : run_dir().substr(5);
  auto r = run(fx, *s.session, "ls -A /run; ls -A /run | wc -l");
  CHECK_MESSAGE(contains(r.output, "\n" + entry + "\n1\n"), r.output);
  CHECK(fx.close(*s.session).ok());

  // A path that is no socket is refused before anything starts.
  config.allow_sockets = {b.ws};
  auto refused = fx.spawn(config, in_dir(b.ws));
  REQUIRE_FALSE(refused.session);
  CHECK_MESSAGE(contains(describe(refused.error), "is not a unix socket"), describe(refused.error));
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("network on reaches the host's loopback, not its abstract sockets (Landlock), never /run") {
  Battery b;
  ShellFixture fx;
  auto s = fx.spawn(patient(sandbox_config(fx, SandboxMode::workspace_write)), in_dir(b.ws, {{"network", "on"}}));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(probe(fx, *s.session, "connect-tcp " + std::to_string(b.services->tcp_port())) == "connect-tcp ok HOST-ANSWER");
  // Landlock's scoping (ABI 6 and later) refuses the host's abstract sockets; an older
  // kernel leaves them reachable with the network on, as docs/security.md says.
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U);
  CAPTURE(abi);
  CHECK(probe(fx, *s.session, "connect-abstract " + b.abstract) ==
        (abi >= 6 ? "connect-abstract err EPERM" : "connect-abstract ok HOST-ANSWER"));
  // Inside its own domain a program still has abstract sockets: a listener and a client
  // of the session's own.
  auto own = run(fx, *s.session, kPython + " -c \"import socket; l=socket.socket(socket.AF_UNIX); "
                                 "l.bind('\\0own-" + b.tag + "'); l.listen(); c=socket.socket(socket.AF_UNIX); "
                                 "c.connect('\\0own-" + b.tag + "'); print('OWN-' + 'OK')\"");
  CHECK_MESSAGE(contains(own.output, "\nOWN-OK"), own.output);
  CHECK(probe(fx, *s.session, "connect-unix " + b.run_sock) == "connect-unix err ENOENT");
  CHECK(probe(fx, *s.session, "vsock") == "socket-40 err EAFNOSUPPORT");
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("read-only: the workspace itself is read-only, .git included") {
  Battery b;
  ShellFixture fx;
  auto s = fx.spawn(patient(sandbox_config(fx, SandboxMode::read_only)), in_dir(b.ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(probe(fx, *s.session, "write " + b.ws + "/f") == "write err EROFS");
  CHECK(contains(run(fx, *s.session, "echo x > .git/hooks/pre-commit").output, "Read-only file system"));
  CHECK(probe(fx, *s.session, "tiocsti") == "tiocsti err EPERM");
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("protected paths: configured ones, and a .git file's gitdir") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string gitdirs = scratch.sub("gitdirs");
  // A separate git directory inside another writable root: ws/.git is a file naming it.
  REQUIRE(system_quiet("git init -q --separate-git-dir=" + gitdirs + "/repo " + ws) == 0);
  { std::ofstream(ws + "/.envrc") << "export A=1\n"; }
  ShellFixture fx;
  auto config = sandbox_config(fx, SandboxMode::workspace_write);
  config.writable_roots = {gitdirs};
  config.protected_paths = {".envrc"};
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = run(fx, *s.session, "echo x > " + gitdirs + "/repo/hooks/pre-commit");
  CHECK_MESSAGE(contains(r.output, "Read-only file system"), r.output);
  r = run(fx, *s.session, "echo x >> .envrc");
  CHECK_MESSAGE(contains(r.output, ".envrc: Read-only file system"), r.output);
  // The positive control: the rest of both roots is writable.
  CHECK(run(fx, *s.session, "echo x > " + gitdirs + "/other && echo x > ws-file").exit_code == 0);
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("a symlink planted by one session cannot carry the next one's mounts onto the host") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string victim = scratch.sub("victim");
  ::mkdir((ws + "/cache").c_str(), 0755);
  ShellFixture fx;
  // Session one may write the workspace: it replaces cache/ with a link to the victim, and
  // plants a .git link too.
  auto first = fx.spawn(sandbox_config(fx, SandboxMode::workspace_write), in_dir(ws));
  REQUIRE_MESSAGE(first.session, describe(first.error));
  auto r = run(fx, *first.session, "rmdir cache && ln -s " + victim + " cache && echo PLANTED");
  CHECK_MESSAGE(contains(r.output, "\nPLANTED"), r.output);
  CHECK(fx.close(*first.session).ok());

  // Session two has cache/ as a writable root: refused, naming the link; the victim untouched.
  auto config = sandbox_config(fx, SandboxMode::workspace_write);
  config.writable_roots = {ws + "/cache"};
  auto second = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(second.session);
  CHECK(second.error->code == Code::BACKEND_FAILED);
  CHECK_MESSAGE(contains(describe(second.error), ws + "/cache is a symbolic link inside the writable root " + ws),
                describe(second.error));

  // A planted .git link: refused too, before anything starts.
  ::unlink((ws + "/cache").c_str());
  ::mkdir((ws + "/cache").c_str(), 0755);
  REQUIRE(::symlink(victim.c_str(), (ws + "/.git").c_str()) == 0);
  auto third = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(third.session);
  CHECK_MESSAGE(contains(describe(third.error), "protected path " + ws + "/.git is a symbolic link"),
                describe(third.error));

  // The positive control: without the links, the same configuration writes cache/.
  ::unlink((ws + "/.git").c_str());
  auto fourth = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(fourth.session, describe(fourth.error));
  CHECK(run(fx, *fourth.session, "echo x > cache/f").exit_code == 0);
  CHECK(fx.close(*fourth.session).ok());
  struct stat st {};
  CHECK(::stat((ws + "/cache/f").c_str(), &st) == 0);
  CHECK(::stat((victim + "/f").c_str(), &st) < 0);
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("host-wide knobs: /proc/sys and its kin read-only, no capabilities, a root host included") {
  Battery b;
  const bool root = ::geteuid() == 0;
  ShellFixture control_fx;
  auto control = control_fx.spawn(patient(control_fx.config()), in_dir(b.control_ws));
  REQUIRE_MESSAGE(control.session, describe(control.error));
  auto& out = *control.session;
  // Both modes, the network off and on: the knobs are the host's whatever the namespaces.
  for (const auto& [mode, network] : {std::pair{SandboxMode::workspace_write, "off"},
                                      std::pair{SandboxMode::read_only, "on"}}) {
    CAPTURE(static_cast<int>(mode));
    ShellFixture fx;
    auto s = fx.spawn(patient(sandbox_config(fx, mode)), in_dir(b.ws, {{"network", network}}));
    REQUIRE_MESSAGE(s.session, describe(s.error));
    auto& in = *s.session;
    // A same-value write of kernel.hostname: refused by the read-only mount, root's included.
    CHECK(probe(fx, in, "hostname") == "hostname err EROFS");
    // No file of /proc's host-wide part opens for writing (the walk sees the same files
    // outside, where root opens them all).
    CHECK(probe(fx, in, "proc-writable") == "proc-writable ok 0");
    CHECK(probe(fx, in, "caps") == "caps ok 0000000000000000");
    CHECK(probe(fx, in, "tiocsetd") == "tiocsetd err EPERM");
    // Netlink: route for `ip`, never sock_diag (the host's listeners) or audit.
    CHECK(probe(fx, in, "netlink 0") == "netlink-0 ok");
    CHECK(probe(fx, in, "netlink 4") == "netlink-4 err EPROTONOSUPPORT");
    CHECK(probe(fx, in, "netlink 9") == "netlink-9 err EPROTONOSUPPORT");
    // The private network namespace's /proc/sys/net is its own: loopback only.
    auto r = run(fx, in, "ls -1 /proc/sys/net/ipv4/conf");
    if (std::string(network) == "off") CHECK_MESSAGE(contains(r.output, "\nall\ndefault\nlo\n"), r.output);
    CHECK(fx.close(in).ok());
    CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  }
  // The positive controls, unconfined: the same programs reach the kernel.
  if (root) {
    CHECK(probe(control_fx, out, "hostname") == "hostname ok");
    CHECK(probe(control_fx, out, "proc-writable") != "proc-writable ok 0");
    CHECK(probe(control_fx, out, "caps") != "caps ok 0000000000000000");
  }
  CHECK(probe(control_fx, out, "tiocsetd") == "tiocsetd ok");
  CHECK(probe(control_fx, out, "netlink 4") == "netlink-4 ok");
  CHECK(control_fx.close(out).ok());
}

TEST_CASE("tmpfs sizes: /tmp and /dev/shm hold what the config says, /dev itself nothing") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  config.sandbox_tmpfs_bytes = 8u << 20;
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto& in = *s.session;
  auto r = run(fx, in, "df -B1 --output=size /tmp /dev/shm | tail -n +2 | tr -s ' \\n' ' '");
  CHECK_MESSAGE(contains(r.output, " 8388608 8388608"), r.output);
  // The positive control: half of it fits; then more than the rest does not.
  CHECK(run(fx, in, "head -c 4M /dev/zero > /tmp/half").exit_code == 0);
  r = run(fx, in, "head -c 6M /dev/zero > /tmp/more");
  CHECK_MESSAGE(contains(r.output, "No space left on device"), r.output);
  r = run(fx, in, "touch /dev/planted");
  CHECK_MESSAGE(contains(r.output, "Read-only file system"), r.output);
  CHECK(run(fx, in, "echo ok > /dev/null && python3 -c 'import multiprocessing as m; m.Lock()' && echo SHM-OK")
            .output.find("\nSHM-OK") != std::string::npos);
  CHECK(fx.close(in).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("a socket in a directory the session cannot search needs no mask and blocks no spawn") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: only root can make a directory owned by another user here");
    return;
  }
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string hidden = scratch.sub("private");
  const std::string sock = hidden + "/s";
  HostServices services({sock}, "dshpty-probe-private-" + std::to_string(::getpid()));
  // Another user's private directory: bwrap could not make a mount point below it (its user
  // namespace does not map the owner), and a session could not reach the socket either.
  REQUIRE(::chown(hidden.c_str(), 65534, 65534) == 0);
  REQUIRE(::chmod(hidden.c_str(), 0700) == 0);
  ShellFixture fx;
  auto s = fx.spawn(patient(sandbox_config(fx, SandboxMode::workspace_write)), in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(probe(fx, *s.session, "connect-unix " + sock) == "connect-unix err EACCES");
  CHECK(fx.close(*s.session).ok());
  // The positive control: the host's root reaches it.
  ShellFixture control_fx;
  auto control = control_fx.spawn(patient(control_fx.config()), in_dir(ws));
  REQUIRE_MESSAGE(control.session, describe(control.error));
  CHECK(probe(control_fx, *control.session, "connect-unix " + sock) == "connect-unix ok HOST-ANSWER");
  CHECK(control_fx.close(*control.session).ok());
  ::chmod(hidden.c_str(), 0755);
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("the recordings' directory: hidden from every confined session, outside /tmp too") {
  // Under the build tree, not /tmp: the sandbox's private /tmp would hide it by accident.
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string rec = scratch.sub("rec");
  // Another owner's transcript, as the host would have left it (same uid, 0600).
  {
    std::ofstream planted(rec + "/alice-pty-9.cast");
    planted << "{\"version\": 2}\n[0.1, \"o\", \"ALICE-PRIVATE-OUTPUT\"]\n";
  }
  REQUIRE(::chmod((rec + "/alice-pty-9.cast").c_str(), 0600) == 0);
  // The pattern split, so the echoed command line does not match itself.
  const std::string look = "grep -rho 'ALICE[-]PRIVATE[A-Z-]*' " + rec + "/ 2>&1; ls -A " + rec + " | wc -l";
  for (SandboxMode mode : {SandboxMode::read_only, SandboxMode::workspace_write}) {
    const std::string mode_name = mode == SandboxMode::read_only ? "read-only" : "workspace-write";
    CAPTURE(mode_name);
    ShellFixture fx;
    auto config = patient(sandbox_config(fx, mode));
    config.record_dir = rec;
    auto s = fx.spawn(config, in_dir(ws));
    REQUIRE_MESSAGE(s.session, describe(s.error));
    auto r = run(fx, *s.session, look);
    CHECK_MESSAGE(r.output.find("ALICE-PRIVATE-OUTPUT") == std::string::npos, r.output);
    CHECK_MESSAGE(contains(r.output, "\n0"), r.output);  // an empty tmpfs: no entry at all
    // A write lands in the session's own tmpfs, never in the host's directory.
    probe(fx, *s.session, "write " + rec + "/planted");
    CHECK(fx.close(*s.session).ok());
    CHECK(::access((rec + "/planted").c_str(), F_OK) != 0);
    CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  }
  // The positive control: an unconfined session of the same host reads it.
  ShellFixture control_fx;
  auto config = patient(control_fx.config());
  config.record_dir = rec;
  auto control = control_fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(control.session, describe(control.error));
  CHECK(contains(run(control_fx, *control.session, "grep -rho ALICE-PRIVATE-OUTPUT " + rec + "/").output,
                 "ALICE-PRIVATE-OUTPUT"));
  CHECK(control_fx.close(*control.session).ok());
}

TEST_CASE("a confined session's cwd or workspace in the recordings' directory is refused") {
  ScratchDir scratch;
  const std::string rec = scratch.sub("rec");
  const std::string inner = scratch.sub("rec/ws");
  for (const std::string& cwd : {rec, inner}) {
    for (SandboxMode mode : {SandboxMode::read_only, SandboxMode::workspace_write}) {
      ShellFixture fx;
      auto config = sandbox_config(fx, mode);
      config.record_dir = rec;
      auto s = fx.spawn(config, in_dir(cwd));
      CHECK_FALSE(s.session);
      if (s.session) CHECK(fx.close(*s.session).ok());
      if (!s.session) CHECK_MESSAGE(contains(s.error->message, "recordings' directory"), describe(s.error));
    }
  }
}
