#include "watch_socket.hpp"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "linger/state_dir.hpp"
#include "loop/timer.hpp"

namespace dshpty::watch {

using Json = nlohmann::json;

std::string watch_socket_name(long pid) { return "host-" + std::to_string(pid) + std::string(kWatchSuffix); }

namespace {

std::string error_line(const Error& error) {
  return Json{{"error", Json{{"code", std::string(code_name(error->code))}, {"message", error->message}}}}.dump(
             -1, ' ', false, Json::error_handler_t::replace) +
         "\n";
}

}  // namespace

// One peer: its request, then frames out. Its lifecycle is one enum; it is destroyed from
// the loop (WatchSocket::retire), never inside one of its own callbacks.
class WatchSocket::Connection final : public Observer {
 public:
  Connection(WatchSocket& owner, int fd) : owner_(owner), fd_(fd) {
    ev_io_init(&read_watcher_, on_io, fd, EV_READ);
    read_watcher_.data = this;
    ev_io_init(&write_watcher_, on_io, fd, EV_WRITE);
    write_watcher_.data = this;
    ev_io_start(owner_.loop_, &read_watcher_);
    deadline_.bind<&Connection::on_deadline>(owner_.loop_, this);
    deadline_.start(kRequestTimeout);
  }
  ~Connection() override {
    owner_.hub_.remove(this);
    ev_io_stop(owner_.loop_, &read_watcher_);
    ev_io_stop(owner_.loop_, &write_watcher_);
    ::close(fd_);
  }

  // Refused before reading anything: the reason, then closed.
  void refuse(const Error& why) { finish(error_line(why)); }

  bool ready() const override { return state_ == State::watching && outbox_.empty(); }
  void deliver(const std::string& frame) override { send(frame + "\n"); }
  void ended(const std::string& why) override {
    finish(Json{{"ended", why}}.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
  }

 private:
  // request: waiting for its one line; watching: frames go out; closing: the last words
  // are flushed, then the connection is retired; retired: waiting to be destroyed.
  enum class State { request, watching, closing, retired };

  static void on_io(struct ev_loop*, ev_io* watcher, int revents) {
    auto* self = static_cast<Connection*>(watcher->data);
    if (revents & EV_WRITE) self->flush();
    if ((revents & EV_READ) && self->state_ != State::retired) self->on_readable();
  }

  void on_readable() {
    char buf[1024];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {  // the peer left (or failed): nothing more to say
      retire();
      return;
    }
    if (state_ != State::request) {
      // Watching: an observer only reads. Closing: its last words are on their way.
      if (state_ == State::watching) {
        finish(error_line(make_error(Code::INVALID_ARGUMENT,
                                     "an observer only reads: a watch connection takes no message after its request")));
      }
      return;
    }
    request_.append(buf, static_cast<std::size_t>(n));
    const auto newline = request_.find('\n');
    if (newline == std::string::npos) {
      if (request_.size() > kMaxRequestBytes)
        finish(error_line(make_error(Code::INVALID_ARGUMENT, "the request is longer than 4096 bytes")));
      return;
    }
    if (newline + 1 != request_.size()) {
      finish(error_line(make_error(Code::INVALID_ARGUMENT, "one request line, then nothing: an observer only reads")));
      return;
    }
    deadline_.stop();
    handle(request_.substr(0, newline));
  }

  void handle(const std::string& line) {
    Json request = Json::parse(line, nullptr, false);
    const auto op = request.is_object() && request.contains("op") && request["op"].is_string()
                        ? request["op"].get<std::string>()
                        : std::string();
    if (op == "list" && request.size() == 1) {
      Json sessions = Json::array();
      for (const auto& [view, count] : owner_.hub_.sessions()) {
        Json row = Json::parse(ObserverHub::encode_frame(view, count, std::nullopt));
        row.erase("lines");
        row.erase("cursor");
        sessions.push_back(std::move(row));
      }
      finish(Json{{"host", static_cast<long>(::getpid())}, {"sessions", std::move(sessions)}}.dump(
                 -1, ' ', false, Json::error_handler_t::replace) +
             "\n");
      return;
    }
    if (op == "watch" && request.size() == 2 && request.contains("session") && request["session"].is_string()) {
      state_ = State::watching;
      auto added = owner_.hub_.add(request["session"].get<std::string>(), this);
      if (!added) finish(error_line(added.error()));
      return;
    }
    finish(error_line(make_error(Code::INVALID_ARGUMENT,
                                 "a watch request is {\"op\":\"list\"} or {\"op\":\"watch\",\"session\":NAME_OR_ID}")));
  }

  void on_deadline() {
    finish(error_line(make_error(Code::INVALID_ARGUMENT, "no request within 5 s")));
  }

  void send(const std::string& bytes) {
    outbox_ += bytes;
    flush();
  }

  void flush() {
    while (!outbox_.empty()) {
      const ssize_t n = ::send(fd_, outbox_.data(), outbox_.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n <= 0) {  // the peer is gone
        outbox_.clear();
        retire();
        return;
      }
      outbox_.erase(0, static_cast<std::size_t>(n));
    }
    if (outbox_.empty()) {
      ev_io_stop(owner_.loop_, &write_watcher_);
      if (state_ == State::closing) {
        retire();
      } else if (state_ == State::watching) {
        owner_.hub_.ready_again(this);
      }
    } else if (!ev_is_active(&write_watcher_)) {
      ev_io_start(owner_.loop_, &write_watcher_);
    }
  }

  // The last words, then closed.
  void finish(const std::string& last) {
    if (state_ == State::closing || state_ == State::retired) return;
    owner_.hub_.remove(this);
    deadline_.stop();
    state_ = State::closing;
    send(last);
  }

  void retire() {
    if (state_ == State::retired) return;
    state_ = State::retired;
    owner_.hub_.remove(this);
    deadline_.stop();
    ev_io_stop(owner_.loop_, &read_watcher_);
    ev_io_stop(owner_.loop_, &write_watcher_);
    owner_.retire(this);
  }

  WatchSocket& owner_;
  int fd_;
  ev_io read_watcher_{};
  ev_io write_watcher_{};
  shell::Timer deadline_;
  State state_ = State::request;
  std::string request_;
  std::string outbox_;
};

WatchSocket::WatchSocket(struct ev_loop* loop, ObserverHub& hub, linger::FileId helper_file)
    : loop_(loop), hub_(hub), helper_file_(helper_file), deferred_(loop) {}

WatchSocket::~WatchSocket() {
  connections_.clear();
  if (fd_ >= 0) {
    ev_io_stop(loop_, &accept_watcher_);
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

namespace {

// Sockets of hosts that died without removing theirs (SIGKILL): a pid that no longer exists
// names nobody who listens. A live pid is left alone, whatever it runs now.
void sweep_dead_hosts(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("host-", 0) != 0 || name.size() <= 5 + kWatchSuffix.size() ||
        name.compare(name.size() - kWatchSuffix.size(), kWatchSuffix.size(), kWatchSuffix) != 0)
      continue;
    const std::string digits = name.substr(5, name.size() - 5 - kWatchSuffix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid > 0 && ::kill(pid, 0) < 0 && errno == ESRCH) ::unlinkat(::dirfd(d), name.c_str(), 0);
  }
  ::closedir(d);
}

}  // namespace

Status WatchSocket::listen(const std::string& configured) {
  auto dir = linger::prepare_state_dir(configured);
  if (!dir) return dir.error();
  sweep_dead_hosts(*dir);
  const std::string path = *dir + "/" + watch_socket_name(::getpid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    return make_error(Code::BACKEND_FAILED, "the watch socket's path is too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_system_error(Code::BACKEND_FAILED, "watch socket", errno);
  // A file of this name is a dead host's with our pid: nobody listens there.
  ::unlink(path.c_str());
  // Mode 0600 from birth: the socket's mode is its file's when bound.
  ::fchmod(fd, 0600);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || ::chmod(path.c_str(), 0600) < 0 ||
      ::listen(fd, 16) < 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return make_system_error(Code::BACKEND_FAILED, path, err);
  }
  fd_ = fd;
  path_ = path;
  ev_io_init(&accept_watcher_, on_accept, fd_, EV_READ);
  accept_watcher_.data = this;
  ev_io_start(loop_, &accept_watcher_);
  return {};
}

void WatchSocket::on_accept(struct ev_loop*, ev_io* watcher, int) { static_cast<WatchSocket*>(watcher->data)->accept_all(); }

void WatchSocket::accept_all() {
  for (int i = 0; i < 16; ++i) {
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a peer gone before we took it
    if (connections_.size() >= kMaxConnections) {
      ::close(fd);
      continue;
    }
    auto connection = std::make_unique<Connection>(*this, fd);
    Connection* raw = connection.get();
    connections_.emplace(raw, std::move(connection));
    // Who may watch (docs/watch.md): the attach's checks, before the peer may say anything.
    if (Status peer = linger::check_peer(fd, helper_file_); !peer) raw->refuse(peer.error());
  }
}

void WatchSocket::retire(Connection* connection) {
  deferred_.post([this, connection] { connections_.erase(connection); });
}

}  // namespace dshpty::watch
