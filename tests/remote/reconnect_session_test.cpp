// Links that reconnect in one process (docs/outlive.md, "Links that reconnect"): a remote
// session with linger over tests/remote/cut_relay.py, a transport whose SIGKILL cuts the
// link as a killed ssh client does (the far helper sees EOF and lingers; the host sees its
// transport exit). The host's side of the reconnect runs here, in the sanitizer tree too:
// reconnecting then running, the same shell, input typed exactly once whether the cut ate
// it or not, output continuous, a close that proves the tree gone. (Over ssh, with the
// faces: reconnect_e2e.py.)
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "dshpty/remote.hpp"
#include "fixture.hpp"
#include "send_state.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

// The relay processes this test started (children of this process running cut_relay.py).
std::vector<pid_t> relays() {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    std::string argv((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    std::ifstream stat(entry.path() / "stat");
    std::string st((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = st.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(st.c_str() + close + 1, " %c %d", &state, &ppid) != 2) continue;
    if (ppid == ::getpid() && state != 'Z' && argv.find("cut_relay.py") != std::string::npos) {
      out.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return out;
}

struct FarDir {
  std::string path;
  FarDir() {
    char tmpl[] = "/tmp/dshpty-reconnect-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~FarDir() {
    std::filesystem::remove_all(path);
    std::filesystem::remove_all(path + ".host");
  }
  bool empty() const { return std::filesystem::is_empty(path); }
};

RemoteConfig lingering_config(const ShellFixture& fx, const std::string& far_dir) {
  RemoteConfig c;
  c.type = "cut";
  c.transport = {"python3", DSHPTY_TEST_CUT_RELAY, shell::resolve_supervisor_path(""), "--stdio", "--state-dir",
                 far_dir};
  c.shell = fx.config();
  // The host's record goes to a directory of the test's, never the user's own.
  c.shell.state_dir = far_dir + ".host";
  c.ping_interval = 1s;
  c.link_timeout = 5s;
  return c;
}

void cut(ShellFixture& fx, BackendSession& session) {
  auto r = relays();
  REQUIRE(r.size() == 1);
  ::kill(r.front(), SIGKILL);
  // The transport's exit is seen from the loop: reconnecting, until an attempt gets through.
  REQUIRE(run_until(fx.loop(), [&] { return session.status().kind != SessionStatus::Kind::running; }));
}

int lines_in(const std::string& path) {
  std::ifstream f(path);
  int n = 0;
  for (std::string line; std::getline(f, line);) ++n;
  return n;
}

}  // namespace

TEST_CASE("reconnect: a cut link comes back; input typed once, output continuous, the same shell") {
  ShellFixture fx;
  FarDir far;
  auto backend = make_remote_backend(fx.loop(), lingering_config(fx, far.path));
  SpawnRequest request;
  request.options["linger"] = "30";
  auto s = fx.spawn_on(*backend, std::move(request));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  const auto shell_pid = s.session->pid();

  auto r = fx.send(*s.session, test::request("echo one-$((6*7))", {}, 30s));
  REQUIRE_MESSAGE((r && r->wait_reason == WaitReason::stdin_read), show(r));

  // An idle session cut: reconnecting with the transport's words, then running.
  cut(fx, *s.session);
  const SessionStatus during = s.session->status();
  CHECK(during.kind == SessionStatus::Kind::reconnecting);
  CHECK(during.reason.find("python3") != std::string::npos);
  REQUIRE(run_until(fx.loop(), [&] { return s.session->status().running(); }));
  CHECK(s.session->pid() == shell_pid);
  r = fx.send(*s.session, test::request("echo two-$((6*7))", {}, 30s));
  REQUIRE_MESSAGE((r && r->wait_reason == WaitReason::stdin_read && r->viewport.find("two-42") != std::string::npos),
                  show(r));

  // Cut right after a send's input was queued (the cut eats it, or not): typed once, and
  // the send completes once after the reconnect.
  const std::string file = far.path + "/../" + std::filesystem::path(far.path).filename().string() + ".count";
  int completions = 0;
  Result<SendResult> live = make_error(Code::BACKEND_FAILED, "pending");
  auto op = s.session->start_send(test::request("echo x >> " + file + "; seq 1 3000; echo three-$((6*7))", {}, 60s),
                                  [&](Result<SendResult> res) {
                                    ++completions;
                                    live = std::move(res);
                                  });
  REQUIRE(op);
  cut(fx, *s.session);
  REQUIRE(run_until(fx.loop(), [&] { return completions > 0; }, 60s));
  CHECK_MESSAGE((live && live->wait_reason == WaitReason::stdin_read), show(live));
  CHECK(live->viewport.find("three-42") != std::string::npos);
  CHECK(lines_in(file) == 1);
  std::filesystem::remove(file);

  // A cut longer than the send's idle time (the reconnect held 1 s: a slow link): a link
  // being re-established is not silence, so the send completes after the reconnect, with
  // the output the far side kept meanwhile, not inferred_idle before it.
  {
    const std::string slow = far.path + ".slow";
    ::setenv("CUT_RELAY_SLOW", slow.c_str(), 1);
    int idle_completions = 0;
    Result<SendResult> idle_live = make_error(Code::BACKEND_FAILED, "pending");
    auto idle_op = s.session->start_send(test::request("sleep 0.3; echo after-cut-$((6*7))", 200ms, 30s),
                                         [&](Result<SendResult> res) {
                                           ++idle_completions;
                                           idle_live = std::move(res);
                                         });
    REQUIRE(idle_op);
    REQUIRE(run_until(fx.loop(), [&] {
      auto* shell_op = dynamic_cast<shell::ShellSendOperation*>(idle_op->get());
      return shell_op && shell_op->write_landed();
    }));
    { std::ofstream(slow) << "1.0"; }
    cut(fx, *s.session);
    REQUIRE(run_until(fx.loop(), [&] { return idle_completions > 0; }, 60s));
    CHECK_MESSAGE((idle_live && idle_live->wait_reason == WaitReason::stdin_read), show(idle_live));
    CHECK_MESSAGE((idle_live && idle_live->viewport.find("after-cut-42") != std::string::npos), show(idle_live));
    CHECK(idle_completions == 1);
    ::unsetenv("CUT_RELAY_SLOW");
    std::filesystem::remove(slow);
  }

  // Every number once and in order, across the cut.
  auto page = s.session->read(ReadRequest{0, 5000});
  REQUIRE(page);
  int expect = 1;
  std::istringstream lines(page->text);
  for (std::string line; std::getline(lines, line);) {
    if (line == std::to_string(expect)) ++expect;
  }
  CHECK(expect == 3001);

  CHECK(fx.close(*s.session).ok());
  CHECK(completions == 1);
  CHECK(marked_processes(fx.marker()).empty());
  REQUIRE(run_until(fx.loop(), [&] { return relays().empty() && far.empty(); }));
}
