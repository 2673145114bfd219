// No host fd reaches the helper or the shell, and spawn/close cycles
// leave the host's fd count unchanged.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <dirent.h>
#include <climits>
#include <set>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

// fd number -> link target of every fd of `pid`.
std::map<int, std::string> fds_of(pid_t pid) {
  std::map<int, std::string> out;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[PATH_MAX];
    ssize_t n = ::readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
    if (n < 0) continue;
    out[std::atoi(e->d_name)] = std::string(target, static_cast<std::size_t>(n));
  }
  ::closedir(d);
  return out;
}

}  // namespace

TEST_CASE("with 50 inheritable fds open in the host, the shell sees only its terminal") {
  std::vector<int> leaks;
  for (int i = 0; i < 50; ++i) {
    int fd = ::memfd_create("dshpty-leak-probe", 0);  // deliberately inheritable
    REQUIRE(fd >= 0);
    leaks.push_back(fd);
  }
  struct CloseLeaks {
    std::vector<int>& fds;
    ~CloseLeaks() {
      for (int fd : fds) ::close(fd);
    }
  } close_leaks{leaks};

  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  fx.type(*s.session, "sleep 300 &");
  REQUIRE(run_until(fx.loop(), [&] { return !marked_processes_named(fx.marker(), "sleep").empty(); }));

  auto shell_fds = fds_of(*s.session->pid());
  std::set<int> numbers;
  for (const auto& entry : shell_fds) {  // no structured bindings: clang 14 cannot capture them
    int fd = entry.first;
    const std::string& target = entry.second;
    numbers.insert(fd);
    CHECK_MESSAGE(target.rfind("/dev/pts/", 0) == 0, "shell fd ", fd, " -> ", target);
  }
  // bash -i keeps fd 255, its own copy of the terminal, for job control.
  numbers.erase(255);
  CHECK(numbers == std::set<int>{0, 1, 2});

  for (pid_t pid : marked_processes(fx.marker())) {
    for (const auto& entry : fds_of(pid)) {
      int fd = entry.first;
      const std::string& target = entry.second;
      CHECK_MESSAGE(target.find("dshpty-leak-probe") == std::string::npos, "pid ", pid, " fd ",
                    fd, " -> ", target);
    }
  }
  auto helper_fds = fds_of(s.shell()->helper_pid());
  for (const auto& entry : helper_fds) {
    int fd = entry.first;
    const std::string& target = entry.second;
    CHECK_MESSAGE(target.find("/dev/pts/") == std::string::npos, "helper fd ", fd, " -> ", target);
  }

  Status st = fx.close(*s.session);
  CHECK_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("200 spawn/close cycles leave the host's fd count unchanged") {
  ShellFixture fx;
  int before = count_open_fds();
  for (int i = 0; i < 200; ++i) {
    auto s = fx.spawn();
    REQUIRE_MESSAGE(s.session, describe(s.error));
    Status st = fx.close(*s.session);
    REQUIRE_MESSAGE(st.ok(), (st ? "" : describe(st.error())));
  }
  CHECK(count_open_fds() == before);
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}
