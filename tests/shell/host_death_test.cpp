// The host dying (SIGKILL to a process that embeds the shell backend,
// directly or through the Service) leaves no process of its sessions alive: each helper
// sees EOF on its socket and kills its tree.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "child_process.hpp"
#include "dshpty/service.hpp"
#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

constexpr const char* kEscapes =
    R"(sleep 300 & setsid sleep 300 & bash -c "trap '' HUP TERM; sleep 300" &)";

// In the child: two sessions through the backend itself.
int host_with_backend(const std::string& marker, int report) {
  ShellFixture fx;
  auto config = fx.config();
  config.env["DSHPTY_TEST_MARK"] = marker;
  std::vector<Spawned> sessions;
  for (int i = 0; i < 2; ++i) {
    sessions.push_back(fx.spawn(config));
    if (!sessions.back().session) return 1;
    fx.type(*sessions.back().session, kEscapes);
  }
  if (!run_until(fx.loop(), [&] { return marked_processes_named(marker, "sleep").size() >= 6; })) {
    return 2;
  }
  char ready = 'R';
  if (::write(report, &ready, 1) != 1) return 3;
  for (;;) ev_run(fx.loop(), 0);  // until SIGKILLed
}

// In the child: two sessions through a Service.
int host_with_service(const std::string& marker, int report) {
  ShellFixture fx;
  auto config = fx.config();
  config.env["DSHPTY_TEST_MARK"] = marker;
  Service service(fx.loop());
  if (!service.register_backend(make_shell_backend(fx.loop(), config))) return 1;
  Owner owner = service.mint_owner("agent");
  int spawned = 0;
  for (int i = 0; i < 2; ++i) {
    SpawnOptions opts;
    opts.type = "shell";
    service.spawn(owner, opts, [&](Result<SpawnResult> r) {
      if (!r) return;
      ++spawned;
      SendRequest req;
      req.text = kEscapes;
      auto ignored = service.start_send(owner, r->session.id, req, [](Result<SendResult>) {});
      (void)ignored;
    });
  }
  if (!run_until(fx.loop(), [&] { return marked_processes_named(marker, "sleep").size() >= 6; })) {
    return 2;
  }
  char ready = 'R';
  if (::write(report, &ready, 1) != 1) return 3;
  for (;;) ev_run(fx.loop(), 0);  // until SIGKILLed
}

void check_host_death(int (*host)(const std::string&, int)) {
  std::string marker = fresh_marker("host-death");
  auto child = fork_child([&](int report) { return host(marker, report); });
  REQUIRE(child.pid > 0);
  char byte = 0;
  bool ready = read_byte(child, 30s, byte);
  CHECK(ready);
  CHECK(marked_processes_named(marker, "sleep").size() >= 6);

  ::kill(child.pid, SIGKILL);
  wait_child(child, 10s);
  close_child(child);

  // Bounded wait: poll /proc until the marker is gone or the deadline passes.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  std::vector<pid_t> left = marked_processes(marker);
  while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
    left = marked_processes(marker);
  }
  CHECK(left.empty());
  kill_marked(marker);
}

}  // namespace

TEST_CASE("a SIGKILLed host embedding the backend leaves none of its sessions' processes") {
  check_host_death(host_with_backend);
}

TEST_CASE("a SIGKILLed host embedding the Service leaves none of its sessions' processes") {
  check_host_death(host_with_service);
}
