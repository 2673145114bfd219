// Per-session limits by cgroup (docs/security.md, "Resource limits"): a fork storm stops
// at its session's cap and a memory hog dies inside its session, each reported while the shell,
// a neighbour and the host go on; a spawn that cannot have its cgroup fails naming why;
// close leaves no cgroup behind. Real cgroups of this machine (v1 here, or v2 where the
// host's cgroup delegates): a machine with neither reports each case skipped.
#include <doctest/doctest.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "fixture.hpp"
#include "limits/cgroup_location.hpp"
#include "limits/limit_policy.hpp"

using namespace dshpty;
using namespace dshpty::test;
namespace lim = dshpty::shell::limits;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// This process's session cgroups (by name prefix) under the host's cgroup for each
// controller: what a close must have removed.
std::vector<std::string> session_cgroups() {
  std::vector<std::string> out;
  for (const char* c : {"pids", "memory", "cpu"}) {
    auto dir = lim::own_cgroup_dir(c);
    if (!dir) continue;
    DIR* d = ::opendir(dir->c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      if (std::string(e->d_name).rfind(lim::session_name_prefix(), 0) == 0) out.push_back(*dir + "/" + e->d_name);
    }
    ::closedir(d);
  }
  return out;
}

// Declared before the ShellFixture (so destroyed after it, once the trees are killed):
// whatever session cgroup a failed test left is emptied and removed, and the test fails.
struct CgroupCleanup {
  ~CgroupCleanup() {
    lim::set_parent_override_for_tests(std::nullopt);
    for (const auto& path : session_cgroups()) {
      std::istringstream procs(read_file(path + "/cgroup.procs"));
      for (pid_t pid; procs >> pid;) ::kill(pid, SIGKILL);
      // The killed processes leave the cgroup as they exit; rmdir until it is empty
      // (bounded: a process in D state fails the test rather than hanging it).
      bool gone = false;
      for (int i = 0; i < 100000 && !gone; ++i) gone = ::rmdir(path.c_str()) == 0 || errno == ENOENT;
      FAIL_CHECK("a session cgroup was left behind: " << path << (gone ? " (removed now)" : " (still there)"));
    }
  }
};

// Why this machine cannot run a limited session, or empty.
std::string cgroups_unavailable(const char* controller) {
  Limits l;
  if (std::string_view(controller) == "pids") l.pids = 64;
  if (std::string_view(controller) == "memory") l.memory = 64u << 20;
  auto p = lim::place_session_cgroups(l);
  return p ? "" : p.error()->message;
}

// The cgroup path of `pid` in the hierarchy carrying `controller`, from /proc.
std::string cgroup_of(pid_t pid, const char* controller) {
  return lim::cgroup_path_in(read_file("/proc/" + std::to_string(pid) + "/cgroup"), controller).value_or("");
}

SendRequest timed(std::string text, std::chrono::milliseconds timeout) {
  SendRequest r;
  r.text = std::move(text);
  r.timeout = timeout;
  return r;
}

}  // namespace

TEST_CASE("the parsers: /proc/self/cgroup and mountinfo, v1 and v2") {
  const std::string self = "12:pids:/a/b\n4:memory:/process_api/x\n3:cpu,cpuacct:/\n0::/user.slice/u\n";
  CHECK(lim::cgroup_path_in(self, "pids") == "/a/b");
  CHECK(lim::cgroup_path_in(self, "memory") == "/process_api/x");
  CHECK(lim::cgroup_path_in(self, "cpu") == "/");
  CHECK(lim::cgroup_path_in(self, "") == "/user.slice/u");
  CHECK_FALSE(lim::cgroup_path_in(self, "cpuset"));
  CHECK_FALSE(lim::cgroup_path_in("4:memory:/x\n", ""));
  const auto mounts = lim::cgroup_mounts(
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "36 31 0:33 /docker/abc /sys/fs/cgroup/my\\040pids rw - cgroup cgroup rw,pids\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
      "22 1 0:21 / /proc rw - proc proc rw\n");
  REQUIRE(mounts.size() == 3);
  CHECK(mounts[0].controllers == std::vector<std::string>{"rw", "memory"});
  CHECK(mounts[1].root == "/docker/abc");
  CHECK(mounts[1].mount_point == "/sys/fs/cgroup/my pids");
  CHECK(mounts[2].v2);
}

TEST_CASE("a spawn may lower the operator's limits, never raise them") {
  Limits defaults, ceilings;
  defaults.pids = 100;
  ceilings.pids = 200;
  ceilings.memory = 1u << 30;
  Limits asked;
  auto r = lim::resolve_limits(asked, defaults, ceilings);
  REQUIRE(r);
  CHECK(r->pids == 100u);
  CHECK(r->memory == (1u << 30));  // a ceiling with no default is the default
  CHECK_FALSE(r->cpu);
  asked.pids = 201;
  auto above = lim::resolve_limits(asked, defaults, ceilings);
  REQUIRE_FALSE(above);
  CHECK(above.error()->code == Code::INVALID_ARGUMENT);
  CHECK(contains(above.error()->message, "limits.pids"));
  asked.pids = 0;
  CHECK(contains(lim::resolve_limits(asked, {}, {}).error()->message, "limits.pids"));
  asked = {};
  asked.cpu = 0.0;
  CHECK(contains(lim::resolve_limits(asked, {}, {}).error()->message, "limits.cpu"));
  asked = {};
  CHECK_FALSE(lim::resolve_limits(asked, {}, {})->any());  // nothing asked, nothing set
}

TEST_CASE("pids: a fork loop stops at the cap; the session answers, says pids, a neighbour is unaffected") {
  if (auto why = cgroups_unavailable("pids"); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  CgroupCleanup cleanup;
  ShellFixture fx;
  SpawnRequest limited;
  limited.limits.pids = 64;
  auto s = fx.spawn(fx.config(), limited);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto n = fx.spawn();
  REQUIRE_MESSAGE(n.session, describe(n.error));
  // The shell is in a session cgroup of its own, below the host's, with its cap.
  const std::string shell_cg = cgroup_of(*s.session->pid(), "pids");
  CHECK(contains(shell_cg, lim::session_name_prefix()));
  REQUIRE(session_cgroups().size() == 1);
  CHECK(read_file(session_cgroups()[0] + "/pids.max") == "64\n");
  CHECK_FALSE(contains(cgroup_of(*n.session->pid(), "pids"), lim::session_name_prefix()));
  CHECK_FALSE(s.session->limit_hit());

  // The storm runs while the neighbour is driven: bash retries a refused fork (1+2+4+8 s)
  // and then abandons the loop. At most 100 tries.
  std::optional<Result<SendResult>> storm;
  auto op = s.session->start_send(
      timed("for i in $(seq 100); do sleep 100 & done; echo looped", 120s),
      [&](Result<SendResult> r) { storm = std::move(r); });
  REQUIRE(op);
  REQUIRE(run_until(fx.loop(), [&] { return s.session->limit_hit().has_value(); }, 60s));
  CHECK(s.session->limit_hit()->kind == LimitKind::pids);
  auto beside = fx.send(*n.session, "echo neighbour-$((6*7))");
  REQUIRE_MESSAGE(beside, show(beside));
  CHECK(contains(beside->viewport, "neighbour-42"));
  CHECK(beside->wait_reason == WaitReason::stdin_read);
  CHECK_FALSE(n.session->limit_hit());
  REQUIRE(run_until(fx.loop(), [&] { return storm.has_value(); }, 120s));
  REQUIRE_MESSAGE(*storm, show(*storm));
  CHECK(((*storm)->viewport.find("fork: retry") != std::string::npos ||
         (*storm)->viewport.find("Resource temporarily unavailable") != std::string::npos));
  op->reset();
  // The session still answers, and its tree stayed under the cap.
  auto after = fx.send(*s.session, "echo alive; jobs -p | wc -l");
  REQUIRE_MESSAGE(after, show(after));
  CHECK(contains(after->viewport, "alive"));
  CHECK(marked_processes_named(fx.marker(), "sleep").size() < 64);
  CHECK(s.session->limit_hit()->kind == LimitKind::pids);

  CHECK(fx.close(*s.session).ok());
  CHECK(fx.close(*n.session).ok());
  CHECK(session_cgroups().empty());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("memory: a 512 MiB allocation is killed inside a 64 MiB session, reported; shell and host go on") {
  if (auto why = cgroups_unavailable("memory"); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  if (::access("/usr/bin/python3", X_OK) != 0) {
    MESSAGE("skipped: no /usr/bin/python3");
    return;
  }
  CgroupCleanup cleanup;
  ShellFixture fx;
  SpawnRequest limited;
  limited.limits.memory = 64u << 20;
  auto s = fx.spawn(fx.config(), limited);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(contains(cgroup_of(*s.session->pid(), "memory"), lim::session_name_prefix()));
  auto r = fx.send(*s.session, timed("/usr/bin/python3 -c 'b = bytearray(512 << 20)'; echo rc=$?", 60s));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE((contains(r->viewport, "rc=137") || contains(r->viewport, "MemoryError")), show(r));
  REQUIRE(run_until(fx.loop(), [&] { return s.session->limit_hit().has_value(); }, 20s));
  CHECK(s.session->limit_hit()->kind == LimitKind::memory);
  auto after = fx.send(*s.session, "echo still-$((6*7))");
  REQUIRE_MESSAGE(after, show(after));
  CHECK(contains(after->viewport, "still-42"));
  CHECK(fx.close(*s.session).ok());
  CHECK(session_cgroups().empty());
}

TEST_CASE("no cgroup to be had: the spawn fails naming the cause, nothing runs, nothing is left") {
  CgroupCleanup cleanup;
  ShellFixture fx;
  SpawnRequest limited;
  limited.limits.pids = 64;
  SUBCASE("the host's side: a directory that is not a cgroup") {
    char dir[] = "/tmp/dshpty-limits-XXXXXX";
    REQUIRE(::mkdtemp(dir));
    lim::set_parent_override_for_tests(std::string(dir));
    auto s = fx.spawn(fx.config(), limited);
    lim::set_parent_override_for_tests(std::nullopt);
    ::rmdir(dir);
    REQUIRE_FALSE(s.session);
    CHECK(s.error->code == Code::BACKEND_FAILED);
    CHECK_MESSAGE(contains(s.error->message, "is not a cgroup file system"), s.error->message);
  }
  SUBCASE("the helper's side: a cgroup without the controller's files") {
    auto pids_dir = lim::own_cgroup_dir("pids");
    if (!pids_dir) {
      MESSAGE("skipped: no pids cgroup here");
      return;
    }
    // A cpu quota in the pids hierarchy: the host makes the cgroup, the helper cannot write
    // cpu.cfs_quota_us and reports it, the host removes what it made.
    lim::set_parent_override_for_tests(*pids_dir);
    SpawnRequest wrong;
    wrong.limits.cpu = 0.5;
    auto s = fx.spawn(fx.config(), wrong);
    lim::set_parent_override_for_tests(std::nullopt);
    REQUIRE_FALSE(s.session);
    CHECK(s.error->code == Code::BACKEND_FAILED);
    CHECK_MESSAGE(contains(s.error->message, "cpu quota"), s.error->message);
    CHECK_MESSAGE(contains(s.error->message, lim::session_name_prefix()), s.error->message);
  }
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(session_cgroups().empty());
}

TEST_CASE("the operator's ceilings and defaults reach the session's cgroup") {
  if (auto why = cgroups_unavailable("pids"); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  CgroupCleanup cleanup;
  ShellFixture fx;
  auto config = fx.config();
  config.limits.pids = 50;
  config.limit_ceilings.pids = 80;
  SpawnRequest above;
  above.limits.pids = 81;
  auto refused = fx.spawn(config, above);
  REQUIRE_FALSE(refused.session);
  CHECK(refused.error->code == Code::INVALID_ARGUMENT);
  CHECK(contains(refused.error->message, "limits.pids"));
  auto s = fx.spawn(config);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  REQUIRE(session_cgroups().size() == 1);
  CHECK(read_file(session_cgroups()[0] + "/pids.max") == "50\n");
  CHECK(fx.close(*s.session).ok());
  CHECK(session_cgroups().empty());
}

TEST_CASE("a confined session gets its cgroup too, made through the fds bwrap passes on") {
  if (auto why = cgroups_unavailable("pids"); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  if (::access("/usr/bin/bwrap", X_OK) != 0) {
    MESSAGE("skipped: no /usr/bin/bwrap");
    return;
  }
  CgroupCleanup cleanup;
  ShellFixture fx;
  auto config = fx.config();
  config.sandbox = SandboxMode::read_only;
  SpawnRequest limited;
  limited.limits.pids = 32;
  limited.limits.cpu = 0.5;
  auto s = fx.spawn(config, limited);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(s.session->confinement());
  CHECK(contains(cgroup_of(*s.session->pid(), "pids"), lim::session_name_prefix()));
  CHECK(contains(cgroup_of(*s.session->pid(), "cpu"), lim::session_name_prefix()));
  for (const auto& cg : session_cgroups()) {
    if (contains(cg, "/pids/")) CHECK(read_file(cg + "/pids.max") == "32\n");
    if (contains(cg, "/cpu/")) CHECK(read_file(cg + "/cpu.cfs_quota_us") == "50000\n");
  }
  auto r = fx.send(*s.session, "echo inside-$((6*7))");
  REQUIRE_MESSAGE(r, show(r));
  CHECK(contains(r->viewport, "inside-42"));
  // From inside, neither a limit can be raised nor the cgroup left: /sys/fs/cgroup is
  // read-only there, and the helper's fds never reach the shell.
  auto escape = fx.send(*s.session,
                        "d=$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup); "
                        "echo 100000 > /sys/fs/cgroup/pids$d/pids.max; echo raise=$?; "
                        "echo $$ > /sys/fs/cgroup/pids/cgroup.procs; echo leave=$?; "
                        "ls /proc/$$/fd | tr '\\n' ' '");
  REQUIRE_MESSAGE(escape, show(escape));
  CHECK_MESSAGE(contains(escape->viewport, "raise=1"), show(escape));
  CHECK_MESSAGE(contains(escape->viewport, "leave=1"), show(escape));
  CHECK_FALSE_MESSAGE(contains(escape->viewport, " 5 "), show(escape));
  CHECK(contains(cgroup_of(*s.session->pid(), "pids"), lim::session_name_prefix()));
  for (const auto& cg : session_cgroups()) {
    if (contains(cg, "/pids/")) CHECK(read_file(cg + "/pids.max") == "32\n");
  }
  CHECK(fx.close(*s.session).ok());
  CHECK(session_cgroups().empty());
}
