// The TCP ports a process tree listens on (proc/listening_ports.hpp), against real servers:
// python3's http.server, a listener in a grandchild that left by setsid (a double fork,
// reparented to the subreaper), and one in its own network namespace.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "job_procs.hpp"
#include "proc/listening_ports.hpp"
#include "proc/unique_fd.hpp"

using dshpty::proc::ListeningSocket;
using dshpty::proc::PortSource;
using dshpty::proc::scan_listening_ports;
using dshpty::proc::scan_port;
using dshpty::test::ScriptTree;

namespace {

bool have(const char* program) {
  std::string cmd = std::string("command -v ") + program + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

const ListeningSocket* find_port(const dshpty::proc::PortScan& scan, int port) {
  for (const auto& s : scan.sockets)
    if (s.port == port) return &s;
  return nullptr;
}

// "Serving HTTP on 127.0.0.1 port 40123 (http://...) ..." -> 40123.
int served_port(const std::string& line) {
  auto at = line.find(" port ");
  return at == std::string::npos ? 0 : std::atoi(line.c_str() + at + 6);
}

}  // namespace

TEST_CASE("ports: http.server and a setsid grandchild, each with its pid, from both sources") {
  if (!have("python3")) {
    MESSAGE("skipped: no python3");
    return;
  }
  // A listener of the test process itself, outside the tree: never reported.
  dshpty::proc::UniqueFd outsider(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(outsider.get(), reinterpret_cast<sockaddr*>(&any), sizeof any) == 0);
  REQUIRE(::listen(outsider.get(), 1) == 0);
  socklen_t len = sizeof any;
  ::getsockname(outsider.get(), reinterpret_cast<sockaddr*>(&any), &len);
  const int outsider_port = ntohs(any.sin_port);

  ScriptTree tree(
      "python3 -u -m http.server 0 --bind 127.0.0.1 & "
      "( setsid python3 -u -c 'import socket,time,os\n"
      "s=socket.socket(socket.AF_INET6); s.bind((\"::1\",0)); s.listen()\n"
      "print(\"grandchild\", os.getpid(), s.getsockname()[1], flush=True); time.sleep(999)' & ); "
      "wait");
  REQUIRE(tree.pid() > 0);
  int http_port = 0, setsid_port = 0;
  pid_t setsid_pid = 0;
  for (int i = 0; i < 2; ++i) {
    auto line = tree.read_line();
    REQUIRE(line);
    if (line->rfind("grandchild", 0) == 0) {
      std::sscanf(line->c_str(), "grandchild %d %d", &setsid_pid, &setsid_port);
    } else {
      http_port = served_port(*line);
    }
  }
  REQUIRE(http_port > 0);
  REQUIRE(setsid_port > 0);

  // The grandchild's parent exited: it hangs off the subreaper (this process), as an orphan
  // hangs off the session's helper. The tree is the subreaper's.
  std::vector<pid_t> pids = ScriptTree::everything_below();
  REQUIRE(std::find(pids.begin(), pids.end(), setsid_pid) != pids.end());
  for (PortSource source : {PortSource::automatic, PortSource::proc_net, PortSource::sock_diag}) {
    CAPTURE(static_cast<int>(source));
    auto scan = scan_listening_ports(pids, source);
    REQUIRE(scan.ok());
    const ListeningSocket* http = find_port(*scan, http_port);
    REQUIRE(http != nullptr);
    CHECK(http->address == "127.0.0.1");
    CHECK(http->command.rfind("python3", 0) == 0);
    CHECK(http->pid != tree.pid());  // bash holds no socket; python3 does
    const ListeningSocket* grandchild = find_port(*scan, setsid_port);
    REQUIRE(grandchild != nullptr);
    CHECK(grandchild->address == "::1");
    CHECK(grandchild->pid == setsid_pid);
    CHECK(find_port(*scan, outsider_port) == nullptr);
    CHECK(scan->complete);
  }
  // One port at a time, as a wait polls: the owner found, an outsider's port not the tree's.
  for (PortSource source : {PortSource::automatic, PortSource::proc_net}) {
    auto one = dshpty::proc::scan_port(pids, static_cast<std::uint16_t>(setsid_port), source);
    REQUIRE(one.ok());
    REQUIRE(one->sockets.size() == 1);
    CHECK(one->sockets[0].pid == setsid_pid);
    CHECK(one->sockets[0].address == "::1");
    auto outside = dshpty::proc::scan_port(pids, static_cast<std::uint16_t>(outsider_port), source);
    REQUIRE(outside.ok());
    CHECK(outside->sockets.empty());
  }
  // Only the root: bash holds none of them.
  pid_t root = tree.pid();
  auto bash_only = scan_listening_ports({&root, 1});
  REQUIRE(bash_only.ok());
  CHECK(bash_only->sockets.empty());
}

TEST_CASE("ports: a process in another network namespace is read in its namespace") {
  if (!have("python3") || !have("unshare") || std::system("unshare -n true >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: unshare -n is not allowed here");
    return;
  }
  ScriptTree tree(
      "exec unshare -n python3 -u -c 'import socket,time\n"
      "s=socket.socket(); s.bind((\"0.0.0.0\",0)); s.listen()\n"
      "print(s.getsockname()[1], flush=True); time.sleep(999)'");
  auto line = tree.read_line();
  REQUIRE(line);
  int port = std::atoi(line->c_str());
  REQUIRE(port > 0);
  std::vector<pid_t> pids = ScriptTree::everything_below();
  for (PortSource source : {PortSource::automatic, PortSource::proc_net}) {
    auto scan = scan_listening_ports(pids, source);
    REQUIRE(scan.ok());
    const ListeningSocket* s = find_port(*scan, port);
    REQUIRE(s != nullptr);
    CHECK(s->address == "0.0.0.0");
    CHECK(s->pid == tree.pid());
  }
  // sock_diag cannot see into it, and says so rather than report nothing.
  auto diag = scan_listening_ports(pids, PortSource::sock_diag);
  REQUIRE_FALSE(diag.ok());
  CHECK(diag.error()->code == dshpty::Code::BACKEND_FAILED);
}

// The cost of one scan (the bench figure), on trees of 10 and 1,000 processes with one
// listener. Not a test (no thresholds): run with
//   build/tests/shell/shell_job_parts -tc='ports: scan cost*' --no-skip
TEST_CASE("ports: scan cost on 10 and 1,000 processes" * doctest::skip()) {
  for (int n : {10, 1000}) {
    ScriptTree tree("python3 -u -m http.server 0 --bind 127.0.0.1 & for i in $(seq " +
                    std::to_string(n - 2) + "); do sleep 999 & done; echo started; wait");
    int port = 0;
    for (int i = 0; i < 2; ++i) {
      auto line = tree.read_line();
      REQUIRE(line);
      if (line->find(" port ") != std::string::npos) port = served_port(*line);
    }
    REQUIRE(port > 0);
    std::vector<pid_t> pids = dshpty::proc::tree_pids(tree.pid());
    auto t0 = std::chrono::steady_clock::now();
    std::vector<pid_t> walked;
    for (int i = 0; i < 20; ++i) walked = dshpty::proc::tree_pids(tree.pid());
    double walk_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 20;
    for (PortSource source : {PortSource::proc_net, PortSource::sock_diag}) {
      // A wait's poll: one port, before it opens (nothing listens there) and once it has.
      for (int wanted : {0, port}) {
        const int rounds = 50;
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < rounds; ++i) {
          auto scan = scan_port(pids, static_cast<std::uint16_t>(wanted), source);
          REQUIRE(scan.ok());
          REQUIRE(scan->sockets.size() == (wanted == 0 ? 0u : 1u));
        }
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / rounds;
        std::printf("port poll: %zu processes, %s, %s: %.0f us\n", pids.size(),
                    source == PortSource::proc_net ? "proc_net" : "sock_diag",
                    wanted == 0 ? "closed" : "open", us);
      }
      const int rounds = 50;
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < rounds; ++i) {
        auto scan = scan_listening_ports(pids, source);
        REQUIRE(scan.ok());
        REQUIRE(find_port(*scan, port) != nullptr);
      }
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / rounds;
      std::printf("ports scan: %zu processes, %s: %.0f us (tree walk %.0f us)\n", pids.size(),
                  source == PortSource::proc_net ? "proc_net" : "sock_diag", us, walk_us);
    }
  }
}

TEST_CASE("ports: a bound reached says the scan is incomplete, never 'nothing listens'") {
  ScriptTree tree("exec 7</dev/null 8</dev/null 9</dev/null; echo up; read x");
  REQUIRE(tree.read_line() == "up");
  pid_t root = tree.pid();
  dshpty::proc::PortScanLimits tight;
  tight.max_fds = 2;
  auto scan = scan_listening_ports({&root, 1}, PortSource::automatic, tight);
  REQUIRE(scan.ok());
  CHECK_FALSE(scan->complete);
  auto full = scan_listening_ports({&root, 1});
  REQUIRE(full.ok());
  CHECK(full->complete);
  // A pid that is gone is skipped, and said.
  pid_t gone = 0x7FFFFFF0;
  auto missing = scan_listening_ports({&gone, 1});
  REQUIRE(missing.ok());
  CHECK(missing->sockets.empty());
  CHECK_FALSE(missing->complete);
}
