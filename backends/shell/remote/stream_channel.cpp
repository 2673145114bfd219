#include "remote/stream_channel.hpp"

#include <errno.h>
#include <cmath>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "proc/pidfd.hpp"

namespace dshpty::shell {

StreamChannel::StreamChannel(struct ev_loop* loop, ChannelEvents& events, StreamLaunch launch)
    : loop_(loop),
      events_(events),
      launch_(std::move(launch)),
      link_(loop, *this),
      facts_([this] { return link_usable() && welcomed_; },
             [this](std::string frames) { write_frame(frames::Encoded{std::move(frames)}); }) {
  ev_io_init(&stderr_io_, &StreamChannel::on_stderr_readable, -1, EV_READ);
  ev_io_init(&pidfd_io_, &StreamChannel::on_pidfd_readable, -1, EV_READ);
  stderr_io_.data = pidfd_io_.data = this;
  liveness_.bind<&StreamChannel::on_liveness_tick>(loop_, this);
  retry_.bind<&StreamChannel::attempt>(loop_, this);
  rows_ = launch_.rows;
  cols_ = launch_.cols;
  if (launch_.linger) {
    const auto& l = *launch_.linger;
    record_ = RemoteRecord(launch_.reconnect, l.record_dir, l.owner, l.name, l.type, l.seconds, l.mark_nonce, l.shell);
  }
}

StreamChannel::~StreamChannel() { release(); }

Result<std::unique_ptr<StreamChannel>> StreamChannel::launch(struct ev_loop* loop,
                                                             ChannelEvents& events,
                                                             StreamLaunch launch) {
  std::unique_ptr<StreamChannel> channel(new StreamChannel(loop, events, std::move(launch)));
  if (Status st = channel->start(); !st) return st.error();
  return channel;
}

Status StreamChannel::connect_rendezvous() {
  const auto& a = *launch_.attach;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (a.socket_path.size() >= sizeof addr.sun_path) {
    return make_error(Code::BACKEND_FAILED, "rendezvous socket " + a.socket_path + ": path too long");
  }
  std::memcpy(addr.sun_path, a.socket_path.c_str(), a.socket_path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return make_system_error(Code::BACKEND_FAILED, "rendezvous socket", errno);
  // A listening AF_UNIX socket takes the connection at once (or refuses it: a full
  // backlog is EAGAIN, a helper gone ECONNREFUSED).
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
    return make_system_error(Code::BACKEND_FAILED, "cannot reach the lingering session at " + a.socket_path, errno);
  }
  transport_.link = std::move(fd);
  return {};
}

frames::Hello StreamChannel::hello() const {
  return {frames::kProtocolVersion, static_cast<std::uint32_t>(launch_.ping_interval.count()),
          static_cast<std::uint32_t>(launch_.link_timeout.count())};
}

Status StreamChannel::start() {
  std::string out;
  // HELLO and OPEN go out at once: the far helper reads them after its WELCOME, so the
  // start-up costs one round trip, not three.
  if (launch_.attach) {
    if (!launch_.transport.empty()) {
      // A remote session a previous host held: the far side relays this ATTACH.
      auto transport = spawn_transport(launch_.transport);
      if (!transport) return transport.error();
      transport_ = std::move(*transport);
    } else if (Status st = connect_rendezvous(); !st) {
      return st;  // a local one: its helper's rendezvous
    }
    frames::encode(out, hello());
    frames::encode(out, frames::Attach{launch_.attach->key, launch_.attach->token, launch_.attach->owner, false, 0});
    watch_link(std::move(out));
    return {};
  }
  auto transport = spawn_transport(launch_.transport, launch_.record_fd);
  if (!transport) return transport.error();
  transport_ = std::move(*transport);
  frames::encode(out, hello());
  frames::Open open{static_cast<std::uint16_t>(launch_.rows), static_cast<std::uint16_t>(launch_.cols),
                    launch_.session_id, launch_.term, launch_.cwd, launch_.shell_argv, launch_.env};
  if (launch_.limits.pids) open.limit_pids = *launch_.limits.pids;
  if (launch_.limits.memory) open.limit_memory = *launch_.limits.memory;
  if (launch_.limits.cpu) {
    open.limit_cpu_us = static_cast<std::uint64_t>(std::llround(*launch_.limits.cpu * 100'000.0));
    if (open.limit_cpu_us == 0) open.limit_cpu_us = 1;
  }
  if (!frames::encode(out, open)) {
    ::kill(transport_.pid, SIGKILL);
    release();
    return make_error(Code::INVALID_ARGUMENT, "the shell's argv and environment exceed one frame (64 KiB)");
  }
  if (launch_.linger) {
    const auto& l = *launch_.linger;
    frames::encode(out, frames::Linger{l.seconds, l.ring_bytes, l.state_dir, l.owner, l.name, l.type});
  }
  watch_link(std::move(out));
  return {};
}

void StreamChannel::watch_link(std::string first) {
  link_.open(std::move(transport_.link));
  if (transport_.error_text.valid()) {
    ev_io_set(&stderr_io_, transport_.error_text.get(), EV_READ);
    ev_io_start(loop_, &stderr_io_);
  }
  if (transport_.pidfd.valid()) {
    ev_io_set(&pidfd_io_, transport_.pidfd.get(), EV_READ);
    ev_io_start(loop_, &pidfd_io_);
  }
  start_liveness();
  write_frame(frames::Encoded{std::move(first)});
}

void StreamChannel::start_liveness() {
  if (launch_.link_timeout.count() <= 0 || launch_.ping_interval.count() <= 0) return;
  const auto tick = std::min(launch_.ping_interval, launch_.link_timeout);
  liveness_.start(tick, tick);
}

void StreamChannel::note_send(bool live) {
  if (!lingers()) return;
  send_live_ = live;
  write_frame(frames::Sending{live});
}

void StreamChannel::note_shown() {
  if (!lingers() || !has(frames::kCapKeepsShown) || consumed_ == shown_) return;
  shown_ = consumed_;
  write_frame(frames::Shown{shown_});
  // Written now, before the result that showed it reaches its caller: a host that takes the
  // session over next (even while this one lives) then finds the helper told already.
  if (link_usable()) link_.flush();
}

void StreamChannel::drop_transport() {
  ev_io_stop(loop_, &stderr_io_);
  ev_io_stop(loop_, &pidfd_io_);
  liveness_.stop();
  link_.close();
  transport_.link.reset();
  transport_.error_text.reset();
  transport_.pidfd.reset();
}

void StreamChannel::release() {
  retry_.stop();
  record_.remove(key_);
  if (transport_.pidfd.valid() && !transport_ended()) {
    // Best effort, never blocks: a transport still winding down becomes the host's zombie.
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(transport_.pidfd.get()), &info,
             WEXITED | WNOHANG);
  }
  // Closing the link is the far helper's order to kill its tree with no grace (EOF). A
  // release inside a read (the session closed on its output) ends that read too. A
  // transport that ended stays ended: quiescent() still says what the far side proved.
  drop_transport();
  if (state_ == LinkState::up || state_ == LinkState::resuming) state_ = LinkState::broken;
}

// The host leaves and the session outlives it: the link closes, which the far helper of a
// lingering session takes as a cut (it lingers on), and the record stays for the next host
// to take the session back (docs/outlive.md).
void StreamChannel::detach() {
  record_.keep();  // not this host's to remove any more
  // Frames queued this turn (a send's end, a resize) are the far side's to keep for the
  // next host: a detach from inside a send's completion comes before the flush that
  // precedes the loop's next poll.
  if (link_usable()) link_.flush();
  release();
}

// ---- the link ----------------------------------------------------------------------------

bool StreamChannel::read_available() {
  if (!link_usable()) return false;
  return link_.read_some() && link_usable();
}

void StreamChannel::on_link_end(link::LinkEnd end, const std::string& why) {
  switch (end) {
    case link::LinkEnd::closed:
      // EOF, or ECONNRESET when it exited with our frames unread: its exit says why.
      return break_link("");
    case link::LinkEnd::bad_stream:
      return break_link("protocol error: " + why);
    case link::LinkEnd::write_failed:
      return;  // EPIPE: the transport closed its end; its exit (or its EOF) says why
  }
}

void StreamChannel::on_read_done() {
  if (consumed_ - acked_ >= frames::kWindow / 4 && link_usable()) {
    acked_ = consumed_;
    write_frame(frames::Ack{acked_});
  }
}

void StreamChannel::end_output() {
  if (output_ended_) return;
  output_ended_ = true;
  // What was queued and not written never will be (as for a local terminal at EIO).
  if (bytes_written_ < bytes_queued_) {
    bytes_written_ = bytes_queued_;
    events_.on_write_progress();
  }
  events_.on_output_ended();
}

void StreamChannel::break_link(std::string why) {
  if (!link_usable()) return;
  jobs_.link_gone(why);
  link_.break_link(std::move(why));
  link_.stop();
  link_.shutdown();
  if (state_ == LinkState::draining) return;  // the transport's end is being said already
  state_ = LinkState::broken;
  if (!transport_.pidfd.valid() || (lingers() && !launch_.reconnect && !quiescent_)) {
    // An attach's link has no process behind it, and a lingering helper outlives its link
    // (another host took the session over, or the helper failed): the link's end is the
    // whole news. After QUIESCENT the helper's exit follows and is waited for as usual.
    transport_gone(nullptr);
    return;
  }
  // EOF to the transport (the shutdown): a live far helper takes it as the order to kill
  // its tree. A transport that does not exit on it (a wedged link) is killed: the far
  // helper then sees the link go, or its own silence bound fires.
  broken_at_ = ev_now(loop_);
  if (!link_.why_broken().empty()) sys::pidfd_send_signal(transport_.pidfd.get(), SIGKILL);
}

void StreamChannel::on_liveness_tick() {
  const ev_tstamp now = ev_now(loop_);
  if (state_ == LinkState::broken) {
    // The far end closed the link; a transport that lingers past the bound is killed.
    if (now - broken_at_ >= seconds(launch_.link_timeout)) sys::pidfd_send_signal(transport_.pidfd.get(), SIGKILL);
    return;
  }
  if (now - link_.last_rx() >= seconds(launch_.link_timeout)) {
    break_link("no frame from the far helper for " + std::to_string(launch_.link_timeout.count()) + " ms");
    return;
  }
  // Pings keep both bounds honest: the far helper hears from us, we hear its PONG.
  if (now - link_.last_tx() >= seconds(launch_.ping_interval) * 0.5 ||
      now - link_.last_rx() >= seconds(launch_.ping_interval)) {
    write_frame(frames::Empty{frames::Type::ping});
  }
}

// ---- the transport's end -----------------------------------------------------------------

void StreamChannel::on_stderr_readable(struct ev_loop*, ev_io* w, int) {
  auto* c = static_cast<StreamChannel*>(w->data);
  if (!c->stderr_tail_.read_from(c->transport_.error_text.get())) ev_io_stop(c->loop_, w);
}

void StreamChannel::on_pidfd_readable(struct ev_loop*, ev_io* w, int) {
  static_cast<StreamChannel*>(w->data)->reap_transport();
}

std::string StreamChannel::transport_words(const siginfo_t* info) const {
  std::string words = launch_.label;
  const std::string& link_error = link_.why_broken();
  if (lingers() && link_error.empty() && !info) {
    return "the lingering session's link ended (another host attached it, or its helper ended)";
  }
  if (!link_error.empty()) {
    // We broke the link (and killed the transport): our reason, not its exit, is the news.
    words += ": " + link_error;
  } else if (info && info->si_code == CLD_EXITED) {
    words += " exited " + std::to_string(info->si_status);
  } else if (info && (info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED)) {
    words += " killed by " + signal_number_name(info->si_status);
  } else {
    words += " ended";
  }
  if (std::string said = stderr_tail_.last_line(); !said.empty()) {
    words += (link_error.empty() ? ": " : "; it said: ") + said;
  }
  return words;
}

void StreamChannel::reap_transport() {
  siginfo_t info{};
  int rc = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(transport_.pidfd.get()), &info,
                    WEXITED | WNOHANG);
  if (rc == 0 && info.si_pid == 0) return;  // not exited yet
  transport_gone(rc == 0 ? &info : nullptr);
}

void StreamChannel::transport_gone(const siginfo_t* info) {
  if (transport_ended()) return;
  ev_io_stop(loop_, &pidfd_io_);
  liveness_.stop();
  state_ = LinkState::draining;
  // Whatever the link and the stderr still hold comes first: QUIESCENT, the last output,
  // the words of a failure.
  while (read_available()) {
  }
  if (transport_.error_text.valid()) stderr_tail_.read_from(transport_.error_text.get());
  ev_io_stop(loop_, &stderr_io_);
  link_.stop();
  state_ = LinkState::gone;
  if (quiescent_) {
    // The far helper proved its tree gone and drained the terminal before saying so.
    end_output();
    events_.on_quiescent();
    return;
  }
  const std::string words = transport_words(info);
  if (reconnecting_) {
    // A reconnect attempt ended before the far side took the session back.
    if (final_words_) return report_lost(launch_.label + ": " + *final_words_);
    return lose_link(words);
  }
  if (started_ && may_reconnect() && !output_ended_) return lose_link(words);
  if (launch_.attach && final_words_ && launch_.linger) {
    // A previous host's remote session that the far side says is gone (or refuses): its
    // record names nothing any more.
    record_.drop(launch_.attach->key);
  }
  if (!welcomed_ || (launch_.attach && !attach_report_)) {
    // The far helper never spoke (the transport could not connect, authenticate or find
    // it; or something else answered), or a lingering helper refused the attach: nothing
    // of this session ran for us. Like a local wrapper's failure: quiescent() holds now,
    // which the teardown reads.
    quiescent_ = true;
    end_output();
    events_.on_start_failed(make_error(Code::BACKEND_FAILED, words));
    return;
  }
  end_output();
  events_.on_lost(make_error(Code::BACKEND_FAILED, words));
}

// ---- input and control -------------------------------------------------------------------

std::optional<std::size_t> StreamChannel::take_back_input(std::size_t own) {
  // The far side flushes its own terminal's queue: it has the slave. Its answer follows the
  // IN frames before it, so it counts every byte of the send. Nothing is known here now.
  if (!has(frames::kCapTakeBack) || output_ended_ || !link_up() || own > 0xffffffffu) return std::nullopt;
  write_frame(frames::TakeBack{static_cast<std::uint32_t>(own)});
  return std::nullopt;
}

void StreamChannel::write(std::string_view bytes) {
  bytes_queued_ += bytes.size();
  if (launch_.reconnect && !output_ended_) input_kept_.append(bytes);
  const bool down = !link_usable();
  if (output_ended_ || (down && !may_reconnect())) {
    bytes_written_ = bytes_queued_;
    events_.on_write_progress();
    return;
  }
  // The link is down or being taken back: the input waits in input_kept_ for resume().
  if (!link_up()) return;
  terminal_changed(/*by_input=*/true);
  write_frame(frames::In{bytes});
}

Status StreamChannel::resize(unsigned rows, unsigned cols) {
  rows_ = rows;
  cols_ = cols;
  const bool down = !link_usable();
  if (down && may_reconnect()) {
    resize_pending_ = true;  // the far terminal takes it once the link is back
    return {};
  }
  if (down) return make_error(Code::BACKEND_FAILED, "the link to the far helper is gone");
  write_frame(frames::Resize{static_cast<std::uint16_t>(rows), static_cast<std::uint16_t>(cols)});
  terminal_changed(/*by_input=*/false);
  return {};
}

Status StreamChannel::signal_group(pid_t pgid, int signo) {
  if (reconnecting_) {
    return make_error(Code::BACKEND_FAILED, "the link to the far helper is being restored (" + *reconnecting_ +
                                                "): signal again once the session runs");
  }
  if (!link_usable()) return make_error(Code::BACKEND_FAILED, "the link to the far helper is gone");
  write_frame(frames::Signal{pgid, signo});
  terminal_changed(/*by_input=*/false);
  return {};
}

void StreamChannel::mark_readers() { write_mark(1); }

// The far side knows its shell: MARK 2 asks for its baseline alone, a stat and a schedstat
// read where the group's walk is a children file and a status file per process besides.
void StreamChannel::mark_shell_reader(pid_t) { write_mark(2); }

void StreamChannel::write_mark(std::uint8_t mark) {
  facts_.mark_sent();
  mark_at_ = bytes_queued_;
  write_frame(frames::Mark{mark});
  terminal_changed(/*by_input=*/false);
}

// The far side's baseline counts only in a probe's answer, so forgetting it waits for the
// next PROBE (and a MARK 1 before that makes it moot): every send ends with a forget, and
// over ssh a frame of its own wakes ssh, sshd and the far helper for nothing.
void StreamChannel::forget_readers() {
  facts_.forget();
  mark_at_.reset();
}

void StreamChannel::kill_tree(std::chrono::milliseconds grace) {
  if (quiescent_) return;
  kill_grace_ = static_cast<std::uint32_t>(grace.count());  // again after a reconnect
  // The next failed attempt applies the shorter deadline (never from inside this call).
  if (reconnecting_ && kill_asked_at_ == 0) kill_asked_at_ = ev_now(loop_);
  write_frame(frames::Kill{static_cast<std::uint32_t>(grace.count())});
}

// ---- the far terminal's facts ------------------------------------------------------------

TerminalFacts StreamChannel::terminal_facts(FactSet wanted) const {
  // The facts bound to output are asked for only where a local channel would read the
  // terminal; unread input only while there is a count to refresh.
  const bool bound = ((wanted & kFactForeground) && !output_ended_) || (wanted & kFactModes) ||
                     ((wanted & kFactInputUnread) && !output_ended_ && facts_.latest().input_unread >= 0);
  TerminalFacts f = facts_.current(bound, (wanted & kFactLeaderIsShell) != 0);
  if (output_ended_) {
    f.foreground = -1;
    f.input_unread = -1;
  }
  if (shell_pid_ <= 0) f.cwd.clear();
  return f;
}

LossWords StreamChannel::word_loss(const Error& cause) const {
  // The far helper kills the tree when it sees the link end, but nothing proves it did:
  // the status says lost, in the transport's words; a close cannot confirm the end.
  return LossWords{make_error(Code::BACKEND_FAILED,
                              cause->message + ": the end of the session's processes on the far side is unconfirmed"),
                   make_error(Code::BACKEND_FAILED, cause->message), cause->message};
}

}  // namespace dshpty::shell
