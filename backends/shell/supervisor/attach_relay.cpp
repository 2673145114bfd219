#include "supervisor/attach_relay.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "link/messages.hpp"
#include "link/write_all.hpp"
#include "linger/record.hpp"
#include "linger/state_dir.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell {

namespace {

constexpr int kStdin = 0;
constexpr int kStdout = 1;

bool write_all(int fd, const char* data, std::size_t size) {
  return link::write_all(fd, std::string_view(data, size)) == size;
}

bool is_key(const std::string& key) {
  if (key.size() != 16) return false;
  for (char c : key) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// "exited code=null signal=SIGKILL (killed after linger); proof: …", the tombstone's words.
std::string tomb_words(const linger::Tombstone& t) {
  std::string words = "the session ended while no host held it: exited code=";
  words += t.exit_code ? std::to_string(*t.exit_code) : "null";
  words += " signal=";
  words += t.signal ? "SIG" + std::string(sigabbrev_np(*t.signal) ? sigabbrev_np(*t.signal) : "?") : "null";
  if (!t.reason.empty()) words += " (" + t.reason + ")";
  if (!t.proof.empty()) words += "; " + t.proof;
  return words;
}

int gone(const std::string& why) {
  std::string out;
  frames::encode(out, frames::ErrorFrame{static_cast<std::uint32_t>(frames::ErrorCode::session_gone), why});
  write_all(kStdout, out.data(), out.size());
  return 1;
}

// Why no session answers to `key` in `dir`: its tombstone's words, or plainly none.
int session_gone(const std::string& dir, const std::string& key, const std::string& detail) {
  if (auto tomb = linger::read_tombstone(linger::tomb_path(dir, key))) return gone(tomb_words(*tomb));
  return gone("no lingering session " + key + " on this machine" + (detail.empty() ? "" : " (" + detail + ")"));
}

}  // namespace

int run_attach_relay(const std::string& state_dir, const std::string& key, std::string first_bytes) {
  // Blocking from here on: this process has nothing else to do.
  for (int fd : {kStdin, kStdout}) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  if (!is_key(key)) return gone("\"" + key + "\" is not a lingering session's key");
  auto dir = linger::existing_state_dir(state_dir);
  if (!dir) return gone(dir.error()->message);
  if (!*dir) return gone("no lingering session " + key + " on this machine (no state directory)");
  const std::string path = linger::socket_path(**dir, key);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return gone("rendezvous socket " + path + ": path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  proc::UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return gone(std::string("rendezvous socket: ") + std::strerror(errno));
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
    return session_gone(**dir, key, std::strerror(errno));
  }
  if (!write_all(sock.get(), first_bytes.data(), first_bytes.size())) return session_gone(**dir, key, "");

  // The helper's first frame is its WELCOME (an attach's or a refusal's): the host has
  // ours already. Everything after it is passed on untouched.
  frames::FrameReader first;
  bool welcome_dropped = false;
  bool stdin_open = true;
  char buf[64 * 1024];
  for (;;) {
    pollfd fds[2] = {{sock.get(), POLLIN, 0}, {stdin_open ? kStdin : -1, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::read(kStdin, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        // The transport ended: the helper takes its link's end as a detach.
        stdin_open = false;
        ::shutdown(sock.get(), SHUT_WR);
      } else if (!write_all(sock.get(), buf, static_cast<std::size_t>(n))) {
        return 0;
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::read(sock.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return 0;
      std::string_view bytes(buf, static_cast<std::size_t>(n));
      std::string held;
      if (!welcome_dropped) {
        first.feed(bytes);
        if (!first.next()) {
          if (!first.error().empty()) return gone("the lingering helper spoke out of turn: " + first.error());
          continue;
        }
        welcome_dropped = true;
        held = first.take_rest();
        bytes = held;
      }
      if (!write_all(kStdout, bytes.data(), bytes.size())) return 0;
    }
  }
}

}  // namespace dshpty::shell
