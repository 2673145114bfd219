// Lingering through the C++ API (dshpty/linger.hpp, docs/outlive.md): a session spawned
// with "linger" is detached by a leaving host, listed, taken over by a new backend with its
// output replayed, and killed by that host's close; the spawn options' checks. The tools'
// faces and host deaths are shell-outlive-e2e's; this one also runs in the sanitizer tree.
#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "dshpty/linger.hpp"
#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

struct StateDir {
  std::string path;
  StateDir() {
    char tmpl[] = "/tmp/dshpty-linger-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);  // 0700
    path = tmpl;
  }
  ~StateDir() { std::filesystem::remove_all(path); }
  bool empty() const { return std::filesystem::is_empty(path); }
};

bool gone(pid_t pid) { return ::kill(pid, 0) < 0 && errno == ESRCH; }

}  // namespace

TEST_CASE("a lingering session outlives a leaving host and comes back with its output") {
  ShellFixture fx;
  StateDir dir;
  ShellConfig config = fx.config();
  config.state_dir = dir.path;
  auto first = make_shell_backend(fx.loop(), config);
  SpawnRequest open;
  open.name = "one";
  open.options["linger"] = "30";
  Spawned s = fx.spawn_on(*first, open);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, "echo before-$((1+1))");
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->viewport.find("before-2") != std::string::npos);
  const pid_t shell_pid = *s.session->pid();

  // Without the leave, a close kills; with it, the close detaches.
  REQUIRE(detach_lingering_on_close(*first));
  CHECK(fx.close(*s.session));
  s.session.reset();
  CHECK_FALSE(gone(shell_pid));
  std::vector<LingeringSession> found;
  REQUIRE(run_until(fx.loop(), [&] {
    auto listing = list_lingering(dir.path, "");
    if (!listing) return false;
    found = listing->sessions;
    return found.size() == 1 && !found[0].attached;
  }));
  CHECK(found[0].name == "one");
  CHECK(found[0].pid == shell_pid);
  CHECK(found[0].left.count() > 0);
  CHECK(list_lingering(dir.path, "someone else")->sessions.empty());

  SpawnRequest attach;
  attach.options["attach"] = found[0].key;
  // A host whose operator set a floor cannot take over a session that is never confined.
  for (auto floor : {std::pair{SandboxMode::workspace_write, false}, std::pair{SandboxMode::none, true}}) {
    ShellConfig strict = config;
    strict.sandbox_floor = floor.first;
    strict.network_floor = floor.second;
    auto guarded = make_shell_backend(fx.loop(), strict);
    Spawned refused = fx.spawn_on(*guarded, attach);
    REQUIRE_FALSE(refused.session);
    CHECK(refused.error->code == Code::INVALID_ARGUMENT);
    CHECK_MESSAGE(refused.error->message.find("below the operator's floor") != std::string::npos, describe(refused.error));
  }
  CHECK_FALSE(gone(shell_pid));

  // A new host (backend) takes it over by its key.
  auto second = make_shell_backend(fx.loop(), config);
  Spawned a = fx.spawn_on(*second, attach);
  REQUIRE_MESSAGE(a.session, describe(a.error));
  auto report = a.session->attach_report();
  REQUIRE(report);
  CHECK(report->replayed_bytes > 0);
  CHECK(report->gap_bytes == 0);
  CHECK_FALSE(report->send_ended);
  CHECK(a.session->pid() == shell_pid);
  auto page = a.session->read(ReadRequest{});
  REQUIRE(page);
  CHECK(page->text.find("before-2") != std::string::npos);
  // The replay filled the scrollback and the screen; a result shows only what the first
  // host's results never showed: its shown-output cursor came with the session.
  SendRequest look;
  look.timeout = 10s;
  r = fx.send(*a.session, look);
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("before-2") == std::string::npos, show(r));
  r = fx.send(*a.session, "echo after-$((2+2))");
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->viewport.find("after-4") != std::string::npos);

  // A third host takes it over from the second (an attach by key takes it from whoever
  // holds it): the second's session is lost, in words that say so.
  auto third = make_shell_backend(fx.loop(), config);
  Spawned b = fx.spawn_on(*third, attach);
  REQUIRE_MESSAGE(b.session, describe(b.error));
  REQUIRE(run_until(fx.loop(), [&] { return a.session->status().kind == SessionStatus::Kind::lost; }));
  CHECK(a.session->status().reason.find("another host attached it") != std::string::npos);
  a.session.reset();
  r = fx.send(*b.session, look);
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->viewport.find("after-4") == std::string::npos, show(r));
  r = fx.send(*b.session, "echo third-$((3+3))");
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->viewport.find("third-6") != std::string::npos);

  // This host is not leaving: its close kills, with the proof, and leaves nothing.
  CHECK(fx.close(*b.session));
  CHECK(gone(shell_pid));
  CHECK(marked_processes(fx.marker()).empty());
  REQUIRE(run_until(fx.loop(), [&] { return dir.empty(); }));
}

TEST_CASE("linger's checks: whole seconds, not confined, a safe state directory, a known key") {
  ShellFixture fx;
  StateDir dir;
  ShellConfig config = fx.config();
  config.state_dir = dir.path;
  auto backend = make_shell_backend(fx.loop(), config);
  auto spawn_error = [&](std::map<std::string, std::string> options) {
    SpawnRequest request;
    request.options = std::move(options);
    Spawned s = fx.spawn_on(*backend, request);
    CHECK_FALSE(s.session);
    return s.error;
  };
  for (const char* bad : {"1.5", "-1", "604801", "", "5s"}) {
    CAPTURE(bad);
    CHECK(spawn_error({{"linger", bad}})->code == Code::INVALID_ARGUMENT);
  }
  Error confined = spawn_error({{"linger", "5"}, {"sandbox", "read-only"}});
  CHECK(confined->code == Code::INVALID_ARGUMENT);
  CHECK(confined->message == "linger is not available for confined sessions");
  CHECK(spawn_error({{"attach", "0123456789abcdef"}})->code == Code::NO_SESSION);
  CHECK(spawn_error({{"attach", "../../etc/passwd"}})->code == Code::INVALID_ARGUMENT);
  CHECK(spawn_error({{"attach", "0123456789abcdef"}, {"rows", "10"}})->code == Code::INVALID_ARGUMENT);
  ::chmod(dir.path.c_str(), 0755);
  Error loose = spawn_error({{"linger", "5"}});
  CHECK(loose->code == Code::BACKEND_FAILED);
  CHECK(loose->message.find("lets others in") != std::string::npos);
  CHECK(marked_processes(fx.marker()).empty());
}

// The helper rewrites KEY.info at every attach (the presented token is spent, the next
// one written). An attach whose record it cannot write is refused with the cause, and the
// token stays good: a record left holding the spent token would refuse every later host.
TEST_CASE("an attach whose record cannot be written is refused with the cause; the session stays attachable") {
  ShellFixture fx;
  StateDir dir;
  ShellConfig config = fx.config();
  config.state_dir = dir.path;
  auto first = make_shell_backend(fx.loop(), config);
  SpawnRequest open;
  open.options["linger"] = "30";
  Spawned s = fx.spawn_on(*first, open);
  REQUIRE_MESSAGE(s.session, describe(s.error));
  const pid_t shell_pid = *s.session->pid();
  REQUIRE(detach_lingering_on_close(*first));
  CHECK(fx.close(*s.session));
  s.session.reset();
  std::string key;
  REQUIRE(run_until(fx.loop(), [&] {
    auto listing = list_lingering(dir.path, "");
    if (!listing || listing->sessions.size() != 1 || listing->sessions[0].attached) return false;
    key = listing->sessions[0].key;
    return true;
  }));

  // The record's temporary name taken by a directory: its write fails, as root too.
  const std::string blocker = dir.path + "/" + key + ".info.new";
  REQUIRE(::mkdir(blocker.c_str(), 0700) == 0);
  SpawnRequest attach;
  attach.options["attach"] = key;
  auto second = make_shell_backend(fx.loop(), config);
  Spawned refused = fx.spawn_on(*second, attach);
  REQUIRE_FALSE(refused.session);
  CHECK(refused.error->code == Code::BACKEND_FAILED);
  CHECK_MESSAGE(refused.error->message.find(blocker) != std::string::npos, describe(refused.error));
  CHECK_FALSE(gone(shell_pid));

  // Once the record can be written, the same record's token takes the session over.
  REQUIRE(::rmdir(blocker.c_str()) == 0);
  auto third = make_shell_backend(fx.loop(), config);
  Spawned a = fx.spawn_on(*third, attach);
  REQUIRE_MESSAGE(a.session, describe(a.error));
  CHECK(a.session->pid() == shell_pid);
  CHECK(fx.close(*a.session));
  CHECK(gone(shell_pid));
  CHECK(marked_processes(fx.marker()).empty());
  REQUIRE(run_until(fx.loop(), [&] { return dir.empty(); }));
}
