#include "watch_client.hpp"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <clocale>
#include <cstdio>
#include <cstring>
#include <optional>

#include <ev.h>

#include "linger/peer_check.hpp"
#include "linger/state_dir.hpp"
#include "watch_socket.hpp"
#include "watch_view.hpp"

namespace dshpty::watch {

using Json = nlohmann::json;

namespace {

constexpr const char* kUsage =
    "usage: dshpty-repl watch [--state-dir DIR] [NAME|ID|HOSTPID/ID]\n"
    "       dshpty-repl watch --list [--state-dir DIR]\n"
    "A read-only live view of a running host's session (q or Ctrl-C leaves).\n";

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Connects to a host's watch socket and sends `request`. -1 when nobody listens, or the
// listener is not this uid (a socket of the directory's owner is the only one we speak to),
// or runs inside a session: a session's command could bind a socket in the user's state
// directory and show a person a made-up screen, so the listener gets the peer check a host
// gives its watchers (said on stderr).
int connect_host(const std::string& path, const std::string& request) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return -1;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 ||
      ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != ::getuid()) {
    ::close(fd);
    return -1;
  }
  if (Status listener = linger::check_peer(fd, linger::FileId{}); !listener) {
    std::fprintf(stderr, "dshpty-repl watch: skipping %s: %s\n", path.c_str(), listener.error()->message.c_str());
    ::close(fd);
    return -1;
  }
  // A host that refused us may have closed already: its words are still there to read, so
  // a failed write is not the end (and must not be a SIGPIPE).
  const std::string line = request + "\n";
  (void)::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
  return fd;
}

// Reads one line within `timeout_ms` (blocking, before any loop runs).
std::optional<std::string> read_line(int fd, int timeout_ms) {
  std::string got;
  while (got.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got.substr(0, got.find('\n'));
}

std::string error_words(const Json& reply) {
  const Json& e = reply["error"];
  if (e.is_object()) return e.value("message", std::string("refused"));
  return "refused";
}

TermSize terminal_size() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) return {ws.ws_row, ws.ws_col};
  return {};
}

// The mirror: frames in from the host, keys in from the person (only q and Ctrl-C mean
// anything; nothing is ever sent), redrawn on every frame and every SIGWINCH.
class Mirror {
 public:
  Mirror(struct ev_loop* loop, int fd) : loop_(loop), fd_(fd) {
    ev_io_init(&socket_watcher_, on_socket, fd_, EV_READ);
    socket_watcher_.data = this;
    ev_io_start(loop_, &socket_watcher_);
    tty_ = ::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO);
    if (tty_ && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG | IEXTEN);
      raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
      raw.c_cc[VMIN] = 1;
      raw.c_cc[VTIME] = 0;
      ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
      raw_ = true;
      write_all(STDOUT_FILENO, "\x1b[?1049h\x1b[H\x1b[2J");
    }
    if (tty_) {
      ev_io_init(&key_watcher_, on_key, STDIN_FILENO, EV_READ);
      key_watcher_.data = this;
      ev_io_start(loop_, &key_watcher_);
    }
    for (int i = 0; i < 4; ++i) {
      static constexpr int kSignals[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP};
      ev_signal_init(&signals_[i], on_signal, kSignals[i]);
      signals_[i].data = this;
      ev_signal_start(loop_, &signals_[i]);
    }
  }
  ~Mirror() {
    for (auto& s : signals_) ev_signal_stop(loop_, &s);
    ev_io_stop(loop_, &socket_watcher_);
    if (tty_) ev_io_stop(loop_, &key_watcher_);
    restore();
  }

  int exit_code() const { return exit_code_; }
  const std::string& farewell() const { return farewell_; }

 private:
  void restore() {
    if (!raw_) return;
    write_all(STDOUT_FILENO, "\x1b[?25h\x1b[0m\x1b[?1049l");
    ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    raw_ = false;
  }

  void stop(int code, std::string farewell) {
    exit_code_ = code;
    farewell_ = std::move(farewell);
    ev_break(loop_, EVBREAK_ALL);
  }

  static void on_socket(struct ev_loop*, ev_io* w, int) { static_cast<Mirror*>(w->data)->read_socket(); }
  static void on_key(struct ev_loop*, ev_io* w, int) { static_cast<Mirror*>(w->data)->read_keys(); }
  static void on_signal(struct ev_loop*, ev_signal* w, int) {
    auto* self = static_cast<Mirror*>(w->data);
    if (w->signum == SIGWINCH) {
      self->redraw();
    } else {
      self->stop(0, "");
    }
  }

  void read_socket() {
    char buf[65536];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
      stop(1, "watch: the host went away\n");
      return;
    }
    pending_.append(buf, static_cast<std::size_t>(n));
    std::size_t newline;
    std::optional<Json> newest;
    while ((newline = pending_.find('\n')) != std::string::npos) {
      Json message = Json::parse(pending_.substr(0, newline), nullptr, false);
      pending_.erase(0, newline + 1);
      if (!message.is_object()) continue;
      if (message.contains("error")) {
        stop(1, "watch: " + error_words(message) + "\n");
        return;
      }
      if (message.contains("ended")) {
        if (newest) frame_ = std::move(*newest), redraw();
        stop(0, "watch: " + message["ended"].get<std::string>() + "\n");
        return;
      }
      newest = std::move(message);
    }
    // Only the newest of a batch is drawn: frames replace one another.
    if (newest) {
      frame_ = std::move(*newest);
      redraw();
    }
  }

  void read_keys() {
    char buf[256];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) stop(0, "");
      return;
    }
    // q or Ctrl-C leaves; every other key is dropped here: an observer has nothing to send.
    for (ssize_t i = 0; i < n; ++i)
      if (buf[i] == 'q' || buf[i] == 'Q' || buf[i] == 0x03) stop(0, "");
  }

  void redraw() {
    if (frame_.is_object()) write_all(STDOUT_FILENO, render_frame(frame_, terminal_size()));
  }

  struct ev_loop* loop_;
  int fd_;
  ev_io socket_watcher_{};
  ev_io key_watcher_{};
  ev_signal signals_[4]{};
  bool tty_ = false;
  bool raw_ = false;
  termios saved_{};
  std::string pending_;
  Json frame_;
  int exit_code_ = 0;
  std::string farewell_;
};

std::string describe_row(const Offered& o) {
  const Json& s = o.session;
  std::string name = s.value("name", Json(nullptr)).is_string() ? s["name"].get<std::string>() : "-";
  std::string line = std::to_string(o.host) + "/" + s.value("sessionId", std::string()) + "  " + name + "  owner=" +
                     s.value("owner", std::string()) + "  " + s.value("status", std::string()) + "  " +
                     s.value("activity", std::string());
  if (s.contains("command") && s["command"].is_string()) line += ": " + s["command"].get<std::string>();
  line += "  " + std::to_string(s.value("rows", 0u)) + "x" + std::to_string(s.value("cols", 0u)) +
          "  observers=" + std::to_string(s.value("observers", 0u));
  for (char& c : line)
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  return line;
}

}  // namespace

Result<WatchArgs> parse_watch_args(const std::vector<std::string_view>& args) {
  WatchArgs out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a == "--list") {
      out.list = true;
    } else if (a == "-h" || a == "--help") {
      out.help = true;
    } else if (a == "--state-dir" || a.rfind("--state-dir=", 0) == 0) {
      std::string_view value;
      if (a == "--state-dir") {
        if (i + 1 >= args.size()) return make_error(Code::INVALID_ARGUMENT, "--state-dir needs a value");
        value = args[++i];
      } else {
        value = a.substr(12);
      }
      if (value.empty() || value.front() != '/')
        return make_error(Code::INVALID_ARGUMENT, "--state-dir needs an absolute path");
      out.state_dir = std::string(value);
    } else if (!a.empty() && a.front() == '-') {
      return make_error(Code::INVALID_ARGUMENT, "watch takes --list and --state-dir DIR, not " + std::string(a));
    } else if (out.word.empty()) {
      out.word = std::string(a);
    } else {
      return make_error(Code::INVALID_ARGUMENT, "watch takes one session, not " + std::string(a) + " too");
    }
  }
  if (out.list && !out.word.empty())
    return make_error(Code::INVALID_ARGUMENT, "watch --list takes no session");
  return out;
}

Result<std::vector<Offered>> discover(const std::string& state_dir) {
  auto dir = linger::existing_state_dir(state_dir);
  if (!dir) return dir.error();
  std::vector<Offered> out;
  if (!*dir) return out;
  DIR* d = ::opendir((*dir)->c_str());
  if (!d) return make_system_error(Code::BACKEND_FAILED, **dir, errno);
  std::vector<std::string> sockets;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("host-", 0) != 0 || name.size() <= kWatchSuffix.size() ||
        name.compare(name.size() - kWatchSuffix.size(), kWatchSuffix.size(), kWatchSuffix) != 0)
      continue;
    sockets.push_back(**dir + "/" + name);
  }
  ::closedir(d);
  std::sort(sockets.begin(), sockets.end());
  for (const auto& path : sockets) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) < 0 || !S_ISSOCK(st.st_mode)) continue;
    const int fd = connect_host(path, R"({"op":"list"})");
    if (fd < 0) continue;  // a dead host's socket
    auto line = read_line(fd, 5000);
    ::close(fd);
    if (!line) continue;
    Json reply = Json::parse(*line, nullptr, false);
    if (!reply.is_object()) continue;
    if (reply.contains("error"))
      return make_error(Code::BACKEND_FAILED, path + ": " + error_words(reply));
    for (auto& session : reply["sessions"]) out.push_back(Offered{path, reply.value("host", 0L), session});
  }
  return out;
}

Result<Offered> choose(const std::vector<Offered>& offered, const std::string& word) {
  std::vector<const Offered*> hits;
  for (const auto& o : offered) {
    const std::string id = o.session.value("sessionId", std::string());
    const bool named = o.session.contains("name") && o.session["name"].is_string() && o.session["name"] == word;
    if (word.empty() || id == word || named || std::to_string(o.host) + "/" + id == word) hits.push_back(&o);
  }
  if (hits.size() == 1) return *hits.front();
  std::string rows;
  for (const auto* o : (hits.empty() ? std::vector<const Offered*>{} : hits)) rows += "\n  " + describe_row(*o);
  if (hits.empty() && offered.empty()) return make_error(Code::NO_SESSION, "no session to watch (no host offers one)");
  if (hits.empty()) {
    for (const auto& o : offered) rows += "\n  " + describe_row(o);
    return make_error(Code::NO_SESSION, "no session \"" + word + "\" to watch; there are:" + rows);
  }
  return make_error(Code::INVALID_ARGUMENT, "more than one session answers to \"" + word +
                                                "\": name one as HOSTPID/ID:" + rows);
}

int run_watch(const std::vector<std::string_view>& args) {
  auto parsed = parse_watch_args(args);
  if (!parsed) {
    std::fprintf(stderr, "dshpty-repl watch: %s\n%s", parsed.error()->message.c_str(), kUsage);
    return 2;
  }
  if (parsed->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::setlocale(LC_CTYPE, "");
  auto offered = discover(parsed->state_dir);
  if (!offered) {
    std::fprintf(stderr, "dshpty-repl watch: %s\n", offered.error()->message.c_str());
    return 1;
  }
  if (parsed->list) {
    if (offered->empty()) std::puts("(no session to watch)");
    for (const auto& o : *offered) std::puts(describe_row(o).c_str());
    return 0;
  }
  auto chosen = choose(*offered, parsed->word);
  if (!chosen) {
    std::fprintf(stderr, "dshpty-repl watch: %s\n", chosen.error()->message.c_str());
    return 1;
  }
  const Json request{{"op", "watch"}, {"session", chosen->session.value("sessionId", std::string())}};
  const int fd = connect_host(chosen->socket, request.dump());
  if (fd < 0) {
    std::fprintf(stderr, "dshpty-repl watch: the host %ld went away\n", chosen->host);
    return 1;
  }
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  int code = 0;
  std::string farewell;
  {
    Mirror mirror(loop, fd);
    ev_run(loop, 0);
    code = mirror.exit_code();
    farewell = mirror.farewell();
  }
  ::close(fd);
  ev_loop_destroy(loop);
  if (!farewell.empty()) std::fputs(farewell.c_str(), code == 0 ? stdout : stderr);
  return code;
}

}  // namespace dshpty::watch
