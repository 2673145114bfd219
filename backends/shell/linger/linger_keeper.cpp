#include "linger/linger_keeper.hpp"

#include <errno.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "link/messages.hpp"
#include "linger/peer_check.hpp"
#include "linger/state_dir.hpp"
#include "proc/random_hex.hpp"

namespace dshpty::shell {

namespace {

using frames::Type;

// How long a connection has to authenticate before it is dropped.
constexpr std::chrono::seconds kAuthBound{5};
// The ring never holds less than the flow-control window and a chunk: output a host has
// not acknowledged is then always still in it while a host is attached.
constexpr std::uint64_t kMinRing = frames::kWindow + frames::kMaxOutChunk;

std::int64_t wall_now() { return static_cast<std::int64_t>(::time(nullptr)); }

}  // namespace

LingerKeeper::LingerKeeper(struct ev_loop* loop, LingerSpec spec, Hooks hooks)
    : loop_(loop),
      spec_(std::move(spec)),
      hooks_(std::move(hooks)),
      ring_(static_cast<std::size_t>(std::max<std::uint64_t>(spec_.ring_bytes, kMinRing))) {
  ev_io_init(&accept_io_, &LingerKeeper::on_accept, -1, EV_READ);
  ev_io_init(&pending_io_, &LingerKeeper::on_pending_readable, -1, EV_READ);
  pending_timer_.bind<&LingerKeeper::on_pending_timeout>(loop_, this);
  expiry_.bind<&LingerKeeper::on_expiry>(loop_, this);
  accept_io_.data = pending_io_.data = this;
}

Result<std::unique_ptr<LingerKeeper>> LingerKeeper::start(struct ev_loop* loop, LingerSpec spec, Hooks hooks) {
  std::unique_ptr<LingerKeeper> k(new LingerKeeper(loop, std::move(spec), std::move(hooks)));
  auto dir = linger::prepare_state_dir(k->spec_.state_dir);
  if (!dir) return dir.error();
  k->dir_ = *dir;
  k->self_file_ = linger::own_executable();
  auto key = proc::random_hex(linger::kKeyDigits / 2);
  if (!key) return key.error();
  auto token = proc::random_hex(32);
  if (!token) return token.error();
  k->record_.key = *key;
  k->record_.token = *token;
  k->record_.owner = k->spec_.owner;
  k->record_.name = k->spec_.name;
  k->record_.type = k->spec_.type;
  k->record_.mark_nonce = k->spec_.mark_nonce;
  k->record_.shell = k->spec_.shell;
  k->record_.helper_pid = ::getpid();
  k->record_.linger_seconds = k->spec_.seconds;
  k->record_.attached = true;

  const std::string path = linger::socket_path(k->dir_, *key);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return make_error(Code::BACKEND_FAILED, "state directory " + k->dir_ + ": its path is too long for a socket");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  k->listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!k->listener_.valid()) return make_system_error(Code::BACKEND_FAILED, "rendezvous socket", errno);
  // The directory is 0700; the socket is the user's alone besides.
  const mode_t old = ::umask(077);
  const int bound = ::bind(k->listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  ::umask(old);
  if (bound < 0) return make_system_error(Code::BACKEND_FAILED, "rendezvous socket " + path, err);
  if (::listen(k->listener_.get(), 8) < 0) {
    const int e = errno;
    ::unlink(path.c_str());
    return make_system_error(Code::BACKEND_FAILED, "rendezvous socket " + path, e);
  }
  if (Status st = linger::write_record(k->dir_, k->record_); !st) {
    ::unlink(path.c_str());
    return st.error();
  }
  ev_io_set(&k->accept_io_, k->listener_.get(), EV_READ);
  ev_io_start(loop, &k->accept_io_);
  return k;
}

LingerKeeper::~LingerKeeper() {
  ev_io_stop(loop_, &accept_io_);
  expiry_.stop();
  drop_pending();
  if (!record_.key.empty() && !dir_.empty()) {
    ::unlink(linger::socket_path(dir_, record_.key).c_str());
    ::unlink(linger::info_path(dir_, record_.key).c_str());
  }
}

void LingerKeeper::set_shell_pid(pid_t pid) {
  record_.shell_pid = pid;
  save_record();
}

void LingerKeeper::set_size(unsigned rows, unsigned cols) {
  record_.rows = rows;
  record_.cols = cols;
  save_record();
}

void LingerKeeper::set_attached(bool attached) {
  record_.attached = attached;
  if (attached) {
    expiry_.stop();
  } else {
    record_.expires_at = wall_now() + spec_.seconds;
    expiry_.start(std::chrono::seconds(spec_.seconds));
  }
  save_record();
}

void LingerKeeper::record_failed(const Error& error) {
  std::fprintf(stderr, "dshpty-supervisor --stdio: linger record: %s\n", error->message.c_str());
}

void LingerKeeper::save_record() {
  if (Status st = linger::write_record(dir_, record_); !st) record_failed(st.error());
}

void LingerKeeper::bury(std::optional<int> exit_code, std::optional<int> signal, std::string reason,
                        std::string proof) {
  if (buried_) return;
  buried_ = true;
  linger::Tombstone t;
  t.key = record_.key;
  t.owner = record_.owner;
  t.name = record_.name;
  t.type = record_.type;
  t.exit_code = exit_code;
  t.signal = signal;
  t.reason = std::move(reason);
  t.proof = std::move(proof);
  t.ended_at = wall_now();
  if (Status st = linger::write_tombstone(dir_, t); !st) record_failed(st.error());
}

void LingerKeeper::on_expiry() {
  ev_io_stop(loop_, &accept_io_);  // nobody attaches a session being killed
  drop_pending();
  if (hooks_.expired) hooks_.expired();
}

// ---- authentication -------------------------------------------------------------------

void LingerKeeper::on_accept(struct ev_loop*, ev_io* w, int) { static_cast<LingerKeeper*>(w->data)->accept_one(); }

void LingerKeeper::accept_one() {
  for (;;) {
    proc::UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) {
      if (errno == EINTR) continue;
      return;  // EAGAIN, or a connection that went away before we took it
    }
    if (Status st = linger::check_peer(fd.get(), self_file_); !st) {
      refuse(std::move(fd), st.error()->message);
      continue;
    }
    if (pending_.valid()) {
      refuse(std::move(fd), "refused: another attach is being authenticated");
      continue;
    }
    pending_ = std::move(fd);
    pending_reader_ = frames::FrameReader();
    pending_hello_ = false;
    ev_io_set(&pending_io_, pending_.get(), EV_READ);
    ev_io_start(loop_, &pending_io_);
    pending_timer_.start(kAuthBound);
  }
}

void LingerKeeper::refuse(proc::UniqueFd fd, const std::string& why) {
  std::string out;
  frames::encode(out, frames::Welcome{frames::kProtocolVersion, 0, frames::helper_build()});
  frames::encode(out, frames::ErrorFrame{static_cast<std::uint32_t>(frames::ErrorCode::attach_refused), why});
  // Best effort: a refused peer's socket buffer is empty, so this fits; nothing waits.
  (void)::send(fd.get(), out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd.get(), SHUT_WR);
}

void LingerKeeper::drop_pending() {
  ev_io_stop(loop_, &pending_io_);
  pending_timer_.stop();
  pending_.reset();
}

void LingerKeeper::on_pending_timeout() {
  refuse(std::move(pending_), "refused: no ATTACH in time");
  drop_pending();
}

void LingerKeeper::on_pending_readable(struct ev_loop*, ev_io* w, int) {
  static_cast<LingerKeeper*>(w->data)->read_pending();
}

void LingerKeeper::read_pending() {
  char buf[4096];
  ssize_t n = ::recv(pending_.get(), buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) return drop_pending();
  pending_reader_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  // A frame this early is small: anything near the frame bound is not a host of ours.
  if (pending_reader_.buffered() > 8192) {
    refuse(std::move(pending_), "refused: not an ATTACH");
    return drop_pending();
  }
  while (pending_.valid()) {
    auto f = pending_reader_.next();
    if (!f) break;
    if (!pending_hello_) {
      auto hello = f->type == Type::hello ? frames::decode<frames::Hello>(f->payload) : std::nullopt;
      if (!hello || hello->version != frames::kProtocolVersion) {
        refuse(std::move(pending_), "refused: expected HELLO of protocol version " + std::to_string(frames::kProtocolVersion));
        return drop_pending();
      }
      pending_timeout_ms_ = hello->link_timeout_ms;
      pending_hello_ = true;
      continue;
    }
    auto attach = f->type == Type::attach ? frames::decode<frames::Attach>(f->payload) : std::nullopt;
    if (!attach) {
      refuse(std::move(pending_), "refused: expected ATTACH");
      return drop_pending();
    }
    const std::string& key = attach->key;
    const std::string& token = attach->token;
    const std::string& owner = attach->owner;
    AttachRequest request;
    request.link_timeout_ms = pending_timeout_ms_;
    request.resume = attach->resume;
    request.output_from = attach->output_from;
    if (key != record_.key || !linger::same_token(token, record_.token)) {
      refuse(std::move(pending_), "refused: wrong token");
      return drop_pending();
    }
    if (owner != record_.owner) {
      refuse(std::move(pending_), "refused: the session belongs to another owner");
      return drop_pending();
    }
    // Authenticated: only now does the current attachment change. The token is spent:
    // whoever saw it (a log, a copy of an old record) cannot present it again.
    auto next = proc::random_hex(32);
    if (!next) {
      refuse(std::move(pending_), "refused: " + next.error()->message);
      return drop_pending();
    }
    // Spent only once KEY.info says so: a record still holding the spent token would send
    // every later host with a token that is refused. So an attach whose record cannot be
    // written is refused with the cause (as a record that cannot be written at the start
    // refuses the linger), and the token stays good.
    std::string presented = std::exchange(record_.token, *next);
    if (Status st = linger::write_record(dir_, record_); !st) {
      record_.token = std::move(presented);
      refuse(std::move(pending_), "refused: " + st.error()->message);
      return drop_pending();
    }
    proc::UniqueFd link = std::move(pending_);
    frames::FrameReader reader = std::move(pending_reader_);
    drop_pending();
    if (hooks_.adopt) hooks_.adopt(std::move(link), std::move(reader), request);
    return;
  }
  if (!pending_reader_.error().empty()) {
    refuse(std::move(pending_), "refused: " + pending_reader_.error());
    drop_pending();
  }
}

}  // namespace dshpty::shell
