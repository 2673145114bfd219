// The pure and file-level parts of lingering (docs/outlive.md): the replay ring's offsets
// and drops, the rendezvous records' escaping, the state directory's checks, and the peer
// check against real process trees.
#include <doctest/doctest.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

#include "linger/peer_check.hpp"
#include "linger/record.hpp"
#include "linger/replay_ring.hpp"
#include "linger/session_mark.hpp"
#include "linger/state_dir.hpp"

using namespace dshpty::linger;

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dshpty-linger-parts-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path + "'").c_str()); }
};
}  // namespace

TEST_CASE("the ring keeps the newest bytes by absolute offset and drops the oldest") {
  ReplayRing ring(10);
  ring.append("abcdef");
  CHECK(ring.start() == 0);
  CHECK(ring.end() == 6);
  CHECK(ring.view(2, 3) == "cde");
  ring.append("ghijkl");  // 12 bytes printed: the first two are gone
  CHECK(ring.start() == 2);
  CHECK(ring.end() == 12);
  CHECK(ring.view(0, 100) == "cdefghijkl");  // an offset before the start is clamped
  CHECK(ring.view(11, 100) == "l");
  CHECK(ring.view(12, 100).empty());
  ring.append(std::string(25, 'x') + "END");  // larger than the ring at once
  CHECK(ring.end() == 40);
  CHECK(ring.start() == 30);
  CHECK(ring.view(30, 100) == "xxxxxxxEND");
  // Many small appends keep it bounded: compaction moves what was dropped out.
  for (int i = 0; i < 10000; ++i) ring.append("0123456789");
  CHECK(ring.held() == 10);
  CHECK(ring.memory_bytes() < 4096);
  CHECK(ring.view(ring.start(), 100) == "0123456789");
}

TEST_CASE("a record's values cannot add a line, and come back as written") {
  TempDir dir;
  SessionRecord r;
  r.key = "0123456789abcdef";
  r.owner = "own\ner%0A";
  r.name = "evil\nattached=1\r";
  r.token = "t";
  r.attached = false;
  r.rows = 30;
  r.cols = 100;
  REQUIRE(write_record(dir.path, r));
  auto back = read_record(info_path(dir.path, r.key));
  REQUIRE(back);
  CHECK(back->owner == r.owner);
  CHECK(back->name == r.name);
  CHECK(back->attached == false);
  CHECK(back->rows == 30);
  struct stat st {};
  REQUIRE(::stat(info_path(dir.path, r.key).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(same_token("abc", "abc"));
  CHECK_FALSE(same_token("abc", "abd"));
  CHECK_FALSE(same_token("", ""));
}

TEST_CASE("the state directory is created 0700 and refused when others may enter") {
  TempDir dir;
  const std::string fresh = dir.path + "/state";
  auto made = prepare_state_dir(fresh);
  REQUIRE(made);
  struct stat st {};
  REQUIRE(::stat(fresh.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  ::chmod(fresh.c_str(), 0750);
  auto loose = prepare_state_dir(fresh);
  REQUIRE_FALSE(loose);
  CHECK(loose.error()->message.find("mode 0750 lets others in") != std::string::npos);
  const std::string link = dir.path + "/link";
  REQUIRE(::symlink(fresh.c_str(), link.c_str()) == 0);
  auto linked = prepare_state_dir(link);
  REQUIRE_FALSE(linked);
  CHECK(linked.error()->message.find("not a directory") != std::string::npos);
  CHECK_FALSE(prepare_state_dir("relative/dir"));
  // A listing's look never creates it.
  const std::string missing = dir.path + "/never";
  auto none = existing_state_dir(missing);
  REQUIRE(none);
  CHECK_FALSE(none->has_value());
  CHECK(::access(missing.c_str(), F_OK) != 0);
  auto there = existing_state_dir(fresh);
  CHECK_FALSE(there);  // still 0750: refused, not created or repaired
}

namespace {

// The keeper's side: the helper's file, as the lingering helper (the supervisor) knows it.
FileId supervisor_file() {
  const char* path = std::getenv("DSHPTY_SUPERVISOR");
  REQUIRE_MESSAGE(path, "DSHPTY_SUPERVISOR is not set");
  struct stat st {};
  REQUIRE(::stat(path, &st) == 0);
  return FileId{st.st_dev, st.st_ino, true};
}

enum class Leave { stays, exits_first };

// A child runs `setup` (what a helper does to itself), then forks the peer, which runs
// `peer_setup` and connects; with exits_first the child is gone (as a SIGKILLed helper)
// before the peer connects, and the peer has been reparented. The check's verdict on it.
dshpty::Status check_from(const std::function<void()>& setup, Leave leave,
                  const std::function<void()>& peer_setup = [] {}) {
  TempDir dir;
  const std::string path = dir.path + "/peer.sock";
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener, 1) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    setup();
    int gone[2];
    if (::pipe(gone) < 0) _exit(1);
    const pid_t peer = ::fork();
    if (peer == 0) {
      ::close(gone[1]);
      char c;
      while (::read(gone[0], &c, 1) > 0) {
      }
      // exits_first: the read ends when the child is gone; else at once (see below).
      peer_setup();
      int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) _exit(1);
      while (::read(fd, &c, 1) > 0) {  // until the test closed its end
      }
      _exit(0);
    }
    ::close(gone[0]);
    if (leave == Leave::exits_first) _exit(peer > 0 ? 0 : 1);
    ::close(gone[1]);
    int status = 0;
    ::waitpid(peer, &status, 0);
    _exit(0);
  }
  if (leave == Leave::stays) {
    // The child outlives its peer's connect: its end before a connection means the peer failed.
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
    REQUIRE(pidfd >= 0);
    pollfd fds[2] = {{listener, POLLIN, 0}, {pidfd, POLLIN, 0}};
    while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
    }
    ::close(pidfd);
    REQUIRE_MESSAGE(fds[0].revents, "the peer never connected");
  }
  int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  REQUIRE(conn >= 0);
  dshpty::Status verdict = check_peer(conn, supervisor_file());
  ::close(conn);
  ::close(listener);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  return verdict;
}

std::string why(const dshpty::Status& st) { return st ? "allowed" : st.error()->message; }

}  // namespace

TEST_CASE("the peer check knows a session by its marks, not by the helper's file") {
  // Positive control: a process of this test, outside any session.
  CHECK_MESSAGE(check_from([] {}, Leave::stays).ok(), "an unmarked peer is let through");
  // A helper's tree, whatever the helper's file is called (mark_session_tree names it):
  // the peer inherited the limit.
  auto marked = check_from(mark_session_tree, Leave::stays);
  CHECK_MESSAGE(why(marked).find("runs inside a dshpty session (its RLIMIT_RTTIME carries a session's mark)") !=
                    std::string::npos,
                why(marked));
  // The helper SIGKILLed first, its orphan reparented past it: the mark stays with the peer.
  auto orphan = check_from(mark_session_tree, Leave::exits_first);
  CHECK_MESSAGE(why(orphan).find("carries a session's mark") != std::string::npos, why(orphan));
  // The peer itself may carry the helper's name (a remote host's relay is its --stdio face).
  auto relay = check_from([] {}, Leave::stays, [] { ::prctl(PR_SET_NAME, kHelperComm, 0, 0, 0); });
  CHECK_MESSAGE(relay.ok(), why(relay));
  // A peer without the limit's mark (CAP_SYS_RESOURCE raises a hard limit again) still has
  // the helper above it, by name.
  auto named = check_from([] { ::prctl(PR_SET_NAME, kHelperComm, 0, 0, 0); }, Leave::stays);
  CHECK_MESSAGE(why(named).find("above it is a session helper") != std::string::npos, why(named));
}
