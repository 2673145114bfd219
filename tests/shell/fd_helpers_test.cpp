// The small fd and /proc helpers both halves of the backend share (backends/shell/proc/):
// writing a whole buffer, passing an fd beside a message, the SigIgn mask; and the
// lingering key's check.
#include <doctest/doctest.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "linger/record.hpp"
#include "proc/fd_passing.hpp"
#include "proc/procfs.hpp"
#include "proc/random_hex.hpp"
#include "proc/write_all.hpp"

using namespace dshpty;

namespace {

struct Message {
  std::int32_t type, a, b;
};

bool same_file(int x, int y) {
  struct stat sx {}, sy {};
  return ::fstat(x, &sx) == 0 && ::fstat(y, &sy) == 0 && sx.st_dev == sy.st_dev && sx.st_ino == sy.st_ino;
}

int open_fd_count() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd) n += ::fcntl(fd, F_GETFD) >= 0;
  return n;
}

}  // namespace

TEST_CASE("write_all writes every byte, and names the errno of a write that fails") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  const std::string text(1000, 'x');
  CHECK(proc::write_all(fds[1], text) == 0);
  std::string got(2000, '\0');
  CHECK(::read(fds[0], got.data(), got.size()) == 1000);
  // A pipe nobody reads any more: EPIPE, not a death (the test ignores SIGPIPE meanwhile).
  ::close(fds[0]);
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  CHECK(proc::write_all(fds[1], text) == EPIPE);
  ::sigaction(SIGPIPE, &old, nullptr);
  ::close(fds[1]);
  CHECK(proc::write_all(-1, text) == EBADF);
  CHECK(proc::write_all(-1, "") == 0);  // nothing to write: no call at all
}

TEST_CASE("an fd passed beside a message arrives close-on-exec; anything else is refused and closed") {
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);

  const Message sent{7, 1, 2};
  REQUIRE(proc::send_with_fd(pair[0], &sent, sizeof sent, pipe_fds[0]) == 0);
  Message got{};
  const int fd = proc::receive_with_fd(pair[1], &got, sizeof got);
  REQUIRE(fd >= 0);
  CHECK(got.type == 7);
  CHECK(got.b == 2);
  CHECK(same_file(fd, pipe_fds[0]));
  CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  ::close(fd);

  // A message of another size with an fd: refused, and the fd that came with it closed.
  const int before = open_fd_count();
  const std::int32_t small = 1;
  REQUIRE(proc::send_with_fd(pair[0], &small, sizeof small, pipe_fds[0]) == 0);
  CHECK(proc::receive_with_fd(pair[1], &got, sizeof got) == -1);
  CHECK(open_fd_count() == before);

  // Two fds where one is expected (both fit in the space for one, rounded up), or three
  // (the kernel truncates): refused, and every fd that arrived closed.
  for (int count : {2, 3}) {
    CAPTURE(count);
    int many[3] = {pipe_fds[0], pipe_fds[1], pipe_fds[0]};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof many)] = {};
    iovec iov{const_cast<Message*>(&sent), sizeof sent};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = CMSG_SPACE(count * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(count * sizeof(int));
    std::memcpy(CMSG_DATA(c), many, count * sizeof(int));
    REQUIRE(::sendmsg(pair[0], &mh, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof sent));
    CHECK(proc::receive_with_fd(pair[1], &got, sizeof got) == -1);
    CHECK(open_fd_count() == before);
  }

  // A message without an fd: refused.
  REQUIRE(::send(pair[0], &sent, sizeof sent, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof sent));
  CHECK(proc::receive_with_fd(pair[1], &got, sizeof got) == -1);

  // The peer gone: -1 on this side, EPIPE (never SIGPIPE) on the other.
  ::close(pair[0]);
  CHECK(proc::receive_with_fd(pair[1], &got, sizeof got) == -1);
  int pair2[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair2) == 0);
  ::close(pair2[1]);
  CHECK(proc::send_with_fd(pair2[0], &sent, sizeof sent, pipe_fds[0]) == EPIPE);
  for (int f : {pair[1], pair2[0], pipe_fds[0], pipe_fds[1]}) ::close(f);
}

TEST_CASE("the SigIgn mask of a process: bit signo-1 per ignored signal; 0 for none") {
  struct sigaction ignore {}, old_usr2 {}, old_winch {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGUSR2, &ignore, &old_usr2);
  ::sigaction(SIGWINCH, &ignore, &old_winch);
  const auto mask = procfs::ignored_signals(::getpid());
  ::sigaction(SIGUSR2, &old_usr2, nullptr);
  ::sigaction(SIGWINCH, &old_winch, nullptr);
  auto ignores = [](unsigned long long m, int signo) { return ((m >> (signo - 1)) & 1) != 0; };
  CHECK(ignores(mask, SIGUSR2));
  CHECK(ignores(mask, SIGWINCH));  // 28: past the first hex digits
  CHECK_FALSE(ignores(mask, SIGUSR1));
  CHECK_FALSE(ignores(procfs::ignored_signals(::getpid()), SIGUSR2));
  CHECK(procfs::ignored_signals(0) == 0);
  CHECK(procfs::ignored_signals(-1) == 0);
}

TEST_CASE("a lingering session's key: 16 lowercase hex digits, nothing a path could use") {
  CHECK(linger::is_session_key("0123456789abcdef"));
  for (const char* bad : {"", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF", "../../etc/passwd",
                          "0123456789abcde/", "0123456789abcdeg"}) {
    CAPTURE(bad);
    CHECK_FALSE(linger::is_session_key(bad));
  }
  auto key = proc::random_hex(linger::kKeyDigits / 2);
  REQUIRE(key);
  CHECK(linger::is_session_key(*key));
}

// Stand-ins for getrandom: what each draw answers, in turn (a count of bytes, or -errno).
namespace {
std::vector<ssize_t> draws;
std::size_t draw_calls = 0;
ssize_t scripted_draw(void* buf, std::size_t len, unsigned) {
  if (draw_calls >= draws.size()) return ++draw_calls, errno = EAGAIN, -1;  // asked once too often
  const ssize_t n = draws[draw_calls++];
  if (n < 0) return errno = static_cast<int>(-n), -1;
  std::memset(buf, 0xab, std::min(len, static_cast<std::size_t>(n)));
  return std::min(static_cast<ssize_t>(len), n);
}
}  // namespace

TEST_CASE("random hex: interrupted draws are drawn again; any other failure is an error at once, never a spin") {
  draws = {-EINTR, 3, -EINTR, 5};  // two short draws make up the eight bytes
  draw_calls = 0;
  auto hex = proc::random_hex(8, scripted_draw);
  REQUIRE_MESSAGE(hex, hex.error()->message);
  CHECK(*hex == "abababababababab");
  CHECK(draw_calls == 4);

  for (ssize_t failure : {static_cast<ssize_t>(-ENOSYS), static_cast<ssize_t>(-EFAULT), static_cast<ssize_t>(0)}) {
    CAPTURE(failure);
    draws = {2, failure};
    draw_calls = 0;
    auto failed = proc::random_hex(8, scripted_draw);
    REQUIRE_FALSE(failed);
    CHECK(failed.error()->code == Code::BACKEND_FAILED);
    CHECK(failed.error()->message.find("getrandom") != std::string::npos);
    CHECK(draw_calls == 2);
  }

  auto real = proc::random_hex(16);
  REQUIRE(real);
  CHECK(real->size() == 32);
  CHECK(real->find_first_not_of("0123456789abcdef") == std::string::npos);
}
