#include "channel/stream_channel.hpp"

#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "linger/record.hpp"
#include "proc/pidfd.hpp"

namespace dshpty::shell {

namespace {

using frames::FrameWriter;
using frames::PayloadReader;
using frames::Type;

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerEvent = 8;  // bounded, so a flood cannot starve the host's loop
constexpr std::size_t kInChunk = 32 * 1024;

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

std::string frame(Type type) {
  std::string out;
  FrameWriter(out).begin(type).end();
  return out;
}

// Between reconnect attempts: at once, then doubling up to this bound.
constexpr double kFirstRetrySeconds = 0.25;
constexpr double kMaxRetrySeconds = 4.0;

}  // namespace

StreamChannel::StreamChannel(struct ev_loop* loop, ChannelEvents& events, StreamLaunch launch)
    : loop_(loop), events_(events), launch_(std::move(launch)) {
  ev_io_init(&link_read_, &StreamChannel::on_link_readable, -1, EV_READ);
  ev_io_init(&link_write_, &StreamChannel::on_link_writable, -1, EV_WRITE);
  ev_prepare_init(&flush_before_poll_, &StreamChannel::on_before_poll);
  ev_io_init(&stderr_io_, &StreamChannel::on_stderr_readable, -1, EV_READ);
  ev_io_init(&pidfd_io_, &StreamChannel::on_pidfd_readable, -1, EV_READ);
  ev_timer_init(&liveness_, &StreamChannel::on_liveness_tick, 0., 0.);
  ev_timer_init(&retry_, &StreamChannel::on_retry, 0., 0.);
  link_read_.data = link_write_.data = stderr_io_.data = pidfd_io_.data = liveness_.data = this;
  retry_.data = this;
  rows_ = launch_.rows;
  cols_ = launch_.cols;
  flush_before_poll_.data = this;
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

void StreamChannel::write_hello(std::string& out) const {
  FrameWriter(out)
      .begin(Type::hello)
      .u32(frames::kVersion)
      .u32(static_cast<std::uint32_t>(launch_.ping_interval.count()))
      .u32(static_cast<std::uint32_t>(launch_.link_timeout.count()))
      .end();
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
    write_hello(out);
    FrameWriter(out)
        .begin(Type::attach)
        .str(launch_.attach->key)
        .str(launch_.attach->token)
        .str(launch_.attach->owner)
        .u8(0)
        .u64(0)
        .end();
    watch_link(std::move(out));
    return {};
  }
  auto transport = spawn_transport(launch_.transport);
  if (!transport) return transport.error();
  transport_ = std::move(*transport);
  write_hello(out);
  FrameWriter open(out);
  open.begin(Type::open)
      .u16(static_cast<std::uint16_t>(launch_.rows))
      .u16(static_cast<std::uint16_t>(launch_.cols))
      .str(launch_.session_id)
      .str(launch_.term)
      .u8(launch_.cwd ? 1 : 0)
      .str(launch_.cwd.value_or(""))
      .u32(static_cast<std::uint32_t>(launch_.shell_argv.size()));
  for (const auto& a : launch_.shell_argv) open.str(a);
  open.u32(static_cast<std::uint32_t>(launch_.env.size()));
  for (const auto& e : launch_.env) open.str(e);
  if (out.size() > frames::kMaxFrame) {
    ::kill(transport_.pid, SIGKILL);
    release();
    return make_error(Code::INVALID_ARGUMENT, "the shell's argv and environment exceed one frame (64 KiB)");
  }
  open.end();
  if (launch_.linger) {
    const auto& l = *launch_.linger;
    FrameWriter(out)
        .begin(Type::linger)
        .u32(l.seconds)
        .u64(l.ring_bytes)
        .str(l.state_dir)
        .str(l.owner)
        .str(l.name)
        .str(l.type)
        .end();
  }

  watch_link(std::move(out));
  return {};
}

void StreamChannel::watch_link(std::string first) {
  ev_io_set(&link_read_, transport_.link.get(), EV_READ);
  ev_io_set(&link_write_, transport_.link.get(), EV_WRITE);
  ev_io_start(loop_, &link_read_);
  if (transport_.error_text.valid()) {
    ev_io_set(&stderr_io_, transport_.error_text.get(), EV_READ);
    ev_io_start(loop_, &stderr_io_);
  }
  if (transport_.pidfd.valid()) {
    ev_io_set(&pidfd_io_, transport_.pidfd.get(), EV_READ);
    ev_io_start(loop_, &pidfd_io_);
  }
  // The loop's cached time may be as old as its last poll (a host busy since, a start
  // right after a slow setup): the silence bound counts from now, not from then.
  ev_now_update(loop_);
  last_rx_ = last_tx_ = ev_now(loop_);
  start_liveness();
  send(std::move(first));
}

void StreamChannel::start_liveness() {
  if (launch_.link_timeout.count() <= 0 || launch_.ping_interval.count() <= 0) return;
  const double tick = seconds(std::min(launch_.ping_interval, launch_.link_timeout));
  ev_timer_set(&liveness_, tick, tick);
  ev_timer_start(loop_, &liveness_);
}

void StreamChannel::note_send(bool live) {
  if (!lingers()) return;
  send_live_ = live;
  std::string out;
  FrameWriter(out).begin(Type::sending).u8(live ? 1 : 0).end();
  send(std::move(out));
}

void StreamChannel::note_shown() {
  if (!lingers() || !keeps_shown_ || consumed_ == shown_) return;
  shown_ = consumed_;
  std::string out;
  FrameWriter(out).begin(Type::shown).u64(shown_).end();
  send(std::move(out));
  // Written now, before the result that showed it reaches its caller: a host that takes the
  // session over next (even while this one lives) then finds the helper told already.
  flush();
}

void StreamChannel::release() {
  link_broken_ = true;  // a release inside a read (the session closed on its output) ends it
  ev_io_stop(loop_, &link_read_);
  ev_io_stop(loop_, &link_write_);
  ev_prepare_stop(loop_, &flush_before_poll_);
  ev_io_stop(loop_, &stderr_io_);
  ev_io_stop(loop_, &pidfd_io_);
  ev_timer_stop(loop_, &liveness_);
  ev_timer_stop(loop_, &retry_);
  resuming_ = false;
  remove_record();
  // Closing the link is the far helper's order to kill its tree with no grace (EOF).
  transport_.link.reset();
  if (transport_.pidfd.valid() && !transport_gone_) {
    // Best effort, never blocks: a transport still winding down becomes the host's zombie.
    siginfo_t info{};
    ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(transport_.pidfd.get()), &info,
             WEXITED | WNOHANG);
  }
  transport_.pidfd.reset();
  transport_.error_text.reset();
}

// ---- the link ----------------------------------------------------------------------------

// Frames made while handling one event leave together, in one write once the loop is back
// in its poll: over TCP (ssh) separate small writes would wait on Nagle and delayed ACKs.
// The write is made by a prepare watcher, which libev runs before it updates its kernel
// state and polls: no EPOLLOUT to ask for and wait for (that cost two epoll_ctl and a loop
// turn a flush, and libev's lazy removal one more wake-up). The writable watcher is started
// too, as the fallback for a full link or a frame made while the prepare watchers run; when
// the prepare flush empties the outbox it is stopped before libev ever tells the kernel.
void StreamChannel::send(std::string frame_bytes) {
  if (!transport_.link.valid() || link_broken_) return;
  outbox_.append(frame_bytes);
  last_tx_ = ev_now(loop_);
  ev_io_start(loop_, &link_write_);
  ev_prepare_start(loop_, &flush_before_poll_);
}

void StreamChannel::on_link_writable(struct ev_loop*, ev_io* w, int) {
  static_cast<StreamChannel*>(w->data)->flush();
}

void StreamChannel::on_before_poll(struct ev_loop* loop, ev_prepare* w, int) {
  ev_prepare_stop(loop, w);
  static_cast<StreamChannel*>(w->data)->flush();
}

void StreamChannel::flush() {
  while (!outbox_.empty() && transport_.link.valid() && !link_broken_) {
    ssize_t n = ::send(transport_.link.get(), outbox_.data(), outbox_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      outbox_.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ev_io_start(loop_, &link_write_);
      return;
    }
    // EPIPE: the transport closed its end; its exit says why.
    outbox_.clear();
    break;
  }
  ev_io_stop(loop_, &link_write_);
}

void StreamChannel::on_link_readable(struct ev_loop*, ev_io* w, int) {
  static_cast<StreamChannel*>(w->data)->read_available();
}

bool StreamChannel::read_available() {
  if (in_read_ || link_broken_ || !transport_.link.valid()) return false;
  in_read_ = true;
  bool more = true;
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerEvent && more && !link_broken_; ++i) {
    ssize_t n = ::recv(transport_.link.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      more = false;
      break;
    }
    if (n <= 0) {
      // EOF, or ECONNRESET when it exited with our frames unread: its exit says why.
      break_link("");
      more = false;
      break;
    }
    last_rx_ = ev_now(loop_);
    reader_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    while (!link_broken_) {
      auto f = reader_.next();
      if (!f) break;
      handle(*f);
    }
    if (!reader_.error().empty()) break_link("protocol error: " + reader_.error());
  }
  in_read_ = false;
  if (consumed_ - acked_ >= frames::kWindow / 4 && !link_broken_) {
    acked_ = consumed_;
    std::string ack;
    FrameWriter(ack).begin(Type::ack).u64(acked_).end();
    send(std::move(ack));
  }
  return more && !link_broken_;
}

void StreamChannel::handle(const frames::Frame& f) {
  PayloadReader r(f.payload);
  auto bad = [&](const char* what) {
    final_ = true;  // a far side that breaks the protocol is not reconnected to
    break_link(std::string("protocol error: ") + what);
  };
  if (!welcomed_ && f.type != Type::welcome) return bad("the far side did not start with WELCOME");
  switch (f.type) {
    case Type::welcome: {
      const std::uint32_t version = r.u32();
      const std::uint32_t caps = r.u32();
      r.str();
      if (!r.done()) return bad("short WELCOME");
      if (welcomed_) return bad("a second WELCOME");
      if (version != frames::kVersion) {
        // Not our far side: it never runs anything for a HELLO it does not speak. The
        // session ends as if the transport had failed, in these words.
        final_ = true;
        return break_link("the far dshpty-supervisor speaks protocol version " + std::to_string(version) +
                          "; this host speaks " + std::to_string(frames::kVersion));
      }
      welcomed_ = true;
      proves_readers_ = (caps & frames::kCapProvesReaders) != 0;
      takes_back_ = (caps & frames::kCapTakeBack) != 0;
      keeps_shown_ = (caps & frames::kCapKeepsShown) != 0;
      return;
    }
    case Type::started: {
      const pid_t pid = r.i32();
      if (!r.done()) return bad("short STARTED");
      shell_pid_ = pid;
      // A reconnect's replay ends with STARTED as an attach's does: the session knows.
      if (started_) return;
      started_ = true;
      write_record();
      events_.on_started(pid);
      return;
    }
    case Type::start_failed: {
      std::string what(r.str());
      if (!r.done()) return bad("short START_FAILED");
      events_.on_start_failed(make_error(Code::BACKEND_FAILED, "on the far side: " + what));
      return;
    }
    case Type::out: {
      const std::uint64_t offset = r.u64();
      std::string_view bytes = r.rest();
      if (r.failed() || offset != consumed_) return bad("OUT at an offset out of order");
      consumed_ += bytes.size();
      // The latest answer about readers was measured before this output was read.
      reading_ = false;
      note_bound_facts();
      if (!bytes.empty()) events_.on_output(bytes);
      return;
    }
    case Type::state:
      apply_state(r);
      return;
    case Type::written: {
      const std::uint64_t far_written = r.u64();
      if (!r.done()) return bad("short WRITTEN");
      const std::uint64_t written = far_written > in_base_ ? far_written - in_base_ : 0;
      // Written on the far side is taken for good: a reconnect need not send it again.
      if (written > kept_from_) {
        const std::uint64_t drop = std::min<std::uint64_t>(written - kept_from_, input_kept_.size());
        input_kept_.erase(0, static_cast<std::size_t>(drop));
        kept_from_ += drop;
      }
      if (written > bytes_written_) bytes_written_ = std::min(written, bytes_queued_);
      if (await_written_ && bytes_written_ >= *await_written_) bound_after_written_ = true;
      events_.on_write_progress();
      return;
    }
    case Type::output_ended:
      if (!r.done()) return bad("long OUTPUT_ENDED");
      end_output();
      return;
    case Type::exited: {
      const std::uint8_t by_signal = r.u8();
      const std::int32_t value = r.i32();
      if (!r.done()) return bad("short EXITED");
      events_.on_exited(by_signal ? SessionStatus::exited_by_signal(value)
                                  : SessionStatus::exited_with_code(value));
      return;
    }
    case Type::quiescent:
      if (!r.done()) return bad("long QUIESCENT");
      quiescent_ = true;
      // The link's end follows (the helper exits); what the session waits for is the
      // transport's exit too, so no process of ours is left behind on the host either.
      if (transport_gone_) events_.on_quiescent();
      return;
    case Type::pong:
      return;
    case Type::taken: {
      const std::uint32_t own = r.u32();
      const std::uint32_t taken = r.u32();
      if (!r.done() || taken > own) return bad("bad TAKEN");
      events_.on_taken_back(own, taken);
      return;
    }
    case Type::lingering: {
      key_ = std::string(r.str());
      token_ = std::string(r.str());
      if (!r.done()) return bad("short LINGERING");
      write_record();
      return;
    }
    case Type::attached: {
      const std::uint64_t from = r.u64();
      const std::uint64_t to = r.u64();
      const std::uint64_t gap = r.u64();
      const std::uint8_t send_was_live = r.u8();
      r.i32();  // the shell's pid: STARTED says it once the replay is through
      const std::uint64_t input_received = r.u64();
      std::string next_token(r.str());
      const std::uint64_t shown = r.done() ? from : r.u64();  // an older helper: all unshown
      if (!r.done() || to < from) return bad("bad ATTACHED");
      if (resuming_) {
        if (from < consumed_ || input_received < in_base_) return bad("ATTACHED behind what this host has");
        token_ = std::move(next_token);
        write_record();
        // Output the ring dropped while no host held it (a cut longer than the ring holds):
        // the session's text goes on after a hole.
        consumed_ = acked_ = from;
        resume(input_received);
        return;
      }
      if (!launch_.attach || attach_report_) return bad("bad ATTACHED");
      key_ = launch_.attach->key;
      token_ = std::move(next_token);
      write_record();
      // This host counts its input from 0; the far side counts every host's.
      in_base_ = input_received;
      AttachReport report;
      report.replayed_bytes = to - from;
      report.gap_bytes = gap;
      if (send_was_live) {
        report.send_ended =
            "the host that started it went away while it was live; its command ran on with no host, "
            "and what it printed is in the replay";
      }
      attach_report_ = std::move(report);
      shown_ = shown;
      shown_replay_ = std::clamp(shown, from, to) - from;
      // The replay starts at the ring's oldest byte: offsets go on from there.
      consumed_ = acked_ = from;
      return;
    }
    case Type::error: {
      const std::uint32_t code = r.u32();
      std::string text(r.str());
      // Every ERROR is the far side's last word on this session: a refused or stale
      // token, a session that ended (with its tombstone's proof), a helper that failed.
      final_ = true;
      if (code == frames::kErrorSessionGone) {
        final_words_ = "the far session is gone: " + text;
      } else if (code == frames::kErrorAttachRefused) {
        final_words_ = "the far side refused the reconnect: " + text;
      } else {
        final_words_ = "the far helper failed: " + text;
      }
      break_link(final_words_);
      return;
    }
    default:
      return bad((std::string("unexpected frame ") + frames::type_name(static_cast<std::uint8_t>(f.type))).c_str());
  }
}

void StreamChannel::apply_state(PayloadReader& r) {
  const std::uint32_t seq = r.u32();
  r.u64();  // the offset: frames keep their order, so it is the output delivered so far
  frames::TerminalFacts facts = r.facts();
  if (!r.done()) return break_link("protocol error: short STATE");
  // The ignored signals are measured only for a probe: an unasked STATE keeps the last.
  if (seq == 0 && facts.foreground == facts_.foreground) facts.ignored_signals = facts_.ignored_signals;
  facts_ = std::move(facts);
  if (seq == 0) note_bound_facts();
  if (seq != 0 && seq > stale_before_) {
    answered_seq_ = std::max(answered_seq_, seq);
    reading_ = (facts_.flags & frames::kStateReading) != 0;
    relaying_ = (facts_.flags & frames::kStateRelaying) != 0;
    leader_is_shell_ = (facts_.flags & frames::kStateLeaderIsShell) != 0;
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
  if (link_broken_) return;
  link_broken_ = true;
  if (!why.empty()) link_error_ = std::move(why);
  ev_io_stop(loop_, &link_read_);
  ev_io_stop(loop_, &link_write_);
  ev_prepare_stop(loop_, &flush_before_poll_);
  outbox_.clear();
  if (!transport_.pidfd.valid() || (lingers() && !launch_.reconnect && !quiescent_)) {
    // An attach's link has no process behind it, and a lingering helper outlives its link
    // (another host took the session over, or the helper failed): the link's end is the
    // whole news. After QUIESCENT the helper's exit follows and is waited for as usual.
    ::shutdown(transport_.link.get(), SHUT_RDWR);
    transport_gone(nullptr);
    return;
  }
  // EOF to the transport: a live far helper takes it as the order to kill its tree. A
  // transport that does not exit on it (a wedged link) is killed: the far helper then sees
  // the link go, or its own silence bound fires.
  ::shutdown(transport_.link.get(), SHUT_RDWR);
  broken_at_ = ev_now(loop_);
  if (!link_error_.empty()) sys::pidfd_send_signal(transport_.pidfd.get(), SIGKILL);
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
  if (lingers() && link_error_.empty() && !info) {
    return "the lingering session's link ended (another host attached it, or its helper ended)";
  }
  if (!link_error_.empty()) {
    // We broke the link (and killed the transport): our reason, not its exit, is the news.
    words += ": " + link_error_;
  } else if (info && info->si_code == CLD_EXITED) {
    words += " exited " + std::to_string(info->si_status);
  } else if (info && (info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED)) {
    words += " killed by " + signal_number_name(info->si_status);
  } else {
    words += " ended";
  }
  if (std::string said = stderr_tail_.last_line(); !said.empty()) {
    words += (link_error_.empty() ? ": " : "; it said: ") + said;
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
  if (transport_gone_) return;
  transport_gone_ = true;
  ev_io_stop(loop_, &pidfd_io_);
  ev_timer_stop(loop_, &liveness_);
  // Whatever the link and the stderr still hold comes first: QUIESCENT, the last output,
  // the words of a failure.
  while (read_available()) {
  }
  if (transport_.error_text.valid()) stderr_tail_.read_from(transport_.error_text.get());
  ev_io_stop(loop_, &stderr_io_);
  link_broken_ = true;
  if (quiescent_) {
    // The far helper proved its tree gone and drained the terminal before saying so.
    end_output();
    events_.on_quiescent();
    return;
  }
  const std::string words = transport_words(info);
  if (resuming_ || reconnecting_) {
    // A reconnect attempt ended before the far side took the session back.
    resuming_ = false;
    if (final_) return report_lost(launch_.label + ": " + final_words_);
    return lose_link(words);
  }
  if (started_ && may_reconnect() && !output_ended_) return lose_link(words);
  if (launch_.attach && final_ && launch_.linger && !launch_.linger->record_dir.empty()) {
    // A previous host's remote session that the far side says is gone (or refuses): its
    // record names nothing any more.
    ::unlink(linger::remote_path(launch_.linger->record_dir, launch_.attach->key).c_str());
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
  if (!lost_reported_) {
    lost_reported_ = true;
    events_.on_lost(make_error(Code::BACKEND_FAILED, words));
  }
}

// ---- reconnecting -------------------------------------------------------------------------

void StreamChannel::write_record() {
  if (!launch_.reconnect || !launch_.linger || launch_.linger->record_dir.empty() || key_.empty()) return;
  const auto& l = *launch_.linger;
  linger::SessionRecord r;
  r.key = key_;
  r.token = token_;
  r.owner = l.owner;
  if (!l.name.empty()) r.name = l.name;
  r.type = l.type;
  r.helper_pid = ::getpid();  // the host that holds it
  r.shell_pid = shell_pid_;
  r.rows = rows_;
  r.cols = cols_;
  r.linger_seconds = l.seconds;
  r.attached = true;
  r.mark_nonce = l.mark_nonce;
  r.shell = l.shell;
  // Best effort: without it only a restart loses the session, not this host.
  record_written_ = linger::write_remote_record(l.record_dir, r).ok() || record_written_;
}

// The host leaves and the session outlives it: the link closes, which the far helper of a
// lingering session takes as a cut (it lingers on), and the record stays for the next host
// to take the session back (docs/outlive.md).
void StreamChannel::detach() {
  record_written_ = false;  // kept: not this host's to remove any more
  // Frames queued this turn (a send's end, a resize) are the far side's to keep for the
  // next host: a detach from inside a send's completion comes before the flush that
  // precedes the loop's next poll.
  flush();
  release();
}

void StreamChannel::remove_record() {
  if (!record_written_) return;
  record_written_ = false;
  // Only while it is still ours: a host that took the session over wrote its own.
  const std::string path = linger::remote_path(launch_.linger->record_dir, key_);
  if (auto r = linger::read_record(path); r && r->helper_pid == ::getpid()) ::unlink(path.c_str());
}

void StreamChannel::lose_link(const std::string& words) {
  if (!reconnecting_) {
    cut_at_ = ev_now(loop_);
    attempts_ = 0;
    reconnecting_ = words;
  }
  last_attempt_words_ = words;
  link_broken_ = true;  // until an attempt's link is up; input is kept meanwhile
  ev_io_stop(loop_, &link_read_);
  ev_io_stop(loop_, &link_write_);
  ev_io_stop(loop_, &stderr_io_);
  ev_io_stop(loop_, &pidfd_io_);
  ev_timer_stop(loop_, &liveness_);
  transport_.link.reset();
  transport_.error_text.reset();
  transport_.pidfd.reset();
  schedule_attempt();
}

void StreamChannel::schedule_attempt() {
  const ev_tstamp now = ev_now(loop_);
  // The far helper notices the cut within the link timeout (at once on EOF), then lingers:
  // past both, nothing can be waiting for this host any more.
  double deadline = cut_at_ + launch_.linger->seconds + seconds(launch_.link_timeout);
  // A kill asked for meanwhile (a close) waits for the link one link timeout at most:
  // the far helper's linger finishes the tree otherwise.
  if (kill_asked_at_ > 0) deadline = std::min(deadline, kill_asked_at_ + seconds(launch_.link_timeout));
  if (now >= deadline) {
    return report_lost(launch_.label + ": the link could not be restored within linger (" +
                       std::to_string(launch_.linger->seconds) + " s) and the link timeout; the last attempt: " +
                       last_attempt_words_ + "; the end of the far session is unconfirmed");
  }
  double delay = 0;
  if (attempts_ > 0) delay = std::min(kMaxRetrySeconds, kFirstRetrySeconds * static_cast<double>(1 << std::min(attempts_ - 1, 4)));
  ev_timer_set(&retry_, std::min(delay, deadline - now), 0.);
  ev_timer_start(loop_, &retry_);
}

void StreamChannel::on_retry(struct ev_loop*, ev_timer* w, int) { static_cast<StreamChannel*>(w->data)->attempt(); }

void StreamChannel::attempt() {
  ++attempts_;
  reader_ = frames::FrameReader();
  outbox_.clear();
  stderr_tail_ = StderrTail();
  welcomed_ = false;
  link_error_.clear();
  transport_gone_ = false;
  broken_at_ = 0;
  auto transport = spawn_transport(launch_.transport);
  if (!transport) {
    last_attempt_words_ = transport.error()->message;
    return schedule_attempt();
  }
  transport_ = std::move(*transport);
  link_broken_ = false;
  resuming_ = true;
  // The token travels in-band, in the ATTACH right behind HELLO: the transport's command
  // is the one the session started with.
  std::string out;
  write_hello(out);
  FrameWriter(out)
      .begin(Type::attach)
      .str(key_)
      .str(token_)
      .str(launch_.linger->owner)
      .u8(1)
      .u64(consumed_)
      .end();
  watch_link(std::move(out));
}

void StreamChannel::resume(std::uint64_t far_input_received) {
  const std::uint64_t have = far_input_received - in_base_;
  if (have < kept_from_ || have > bytes_queued_) {
    final_ = true;
    return break_link("protocol error: the far side took input this host no longer has");
  }
  std::string out;
  // A mark goes before the write it was made for: if the far side may not have that
  // write, it may not have the mark either (frames keep their order).
  if (marked_ && have <= mark_at_) FrameWriter(out).begin(Type::mark).u8(1).end();
  FrameWriter(out).begin(Type::sending).u8(send_live_ ? 1 : 0).end();
  if (keeps_shown_) FrameWriter(out).begin(Type::shown).u64(shown_).end();
  if (resize_pending_) {
    FrameWriter(out).begin(Type::resize).u16(static_cast<std::uint16_t>(rows_)).u16(static_cast<std::uint16_t>(cols_)).end();
  }
  // The input the cut ate, from the first byte the far side lacks: typed exactly once.
  const std::string_view lost_input = std::string_view(input_kept_).substr(static_cast<std::size_t>(have - kept_from_));
  for (std::size_t at = 0; at < lost_input.size(); at += kInChunk) {
    FrameWriter(out).begin(Type::in).raw(lost_input.substr(at, kInChunk)).end();
  }
  if (kill_grace_) FrameWriter(out).begin(Type::kill).u32(*kill_grace_).end();
  resize_pending_ = false;
  resuming_ = false;
  reconnecting_.reset();
  attempts_ = 0;
  // Probes asked before the cut are never answered: the next question asks again.
  invalidate_facts();
  send(std::move(out));
}

void StreamChannel::report_lost(const std::string& words) {
  remove_record();  // nothing to take back any more
  reconnecting_.reset();
  resuming_ = false;
  ev_timer_stop(loop_, &retry_);
  link_broken_ = true;
  transport_gone_ = true;
  end_output();
  if (!lost_reported_) {
    lost_reported_ = true;
    events_.on_lost(make_error(Code::BACKEND_FAILED, words));
  }
}

void StreamChannel::on_liveness_tick(struct ev_loop*, ev_timer* w, int) {
  auto* c = static_cast<StreamChannel*>(w->data);
  const ev_tstamp now = ev_now(c->loop_);
  if (c->link_broken_) {
    // The far end closed the link; a transport that lingers past the bound is killed.
    if (now - c->broken_at_ >= seconds(c->launch_.link_timeout)) {
      sys::pidfd_send_signal(c->transport_.pidfd.get(), SIGKILL);
    }
    return;
  }
  if (now - c->last_rx_ >= seconds(c->launch_.link_timeout)) {
    c->break_link("no frame from the far helper for " + std::to_string(c->launch_.link_timeout.count()) +
                  " ms");
    return;
  }
  // Pings keep both bounds honest: the far helper hears from us, we hear its PONG.
  if (now - c->last_tx_ >= seconds(c->launch_.ping_interval) * 0.5 ||
      now - c->last_rx_ >= seconds(c->launch_.ping_interval)) {
    c->send(frame(Type::ping));
  }
}

// ---- input and control -------------------------------------------------------------------

std::optional<std::size_t> StreamChannel::take_back_input(std::size_t own) {
  // The far side flushes its own terminal's queue: it has the slave. Its answer follows the
  // IN frames before it, so it counts every byte of the send. Nothing is known here now.
  if (!takes_back_ || output_ended_ || link_broken_ || resuming_ || own > 0xffffffffu) return std::nullopt;
  std::string out;
  FrameWriter(out).begin(Type::take_back).u32(static_cast<std::uint32_t>(own)).end();
  send(std::move(out));
  return std::nullopt;
}

void StreamChannel::write(std::string_view bytes) {
  bytes_queued_ += bytes.size();
  if (launch_.reconnect && !output_ended_) input_kept_.append(bytes);
  if (output_ended_ || (link_broken_ && !may_reconnect())) {
    bytes_written_ = bytes_queued_;
    events_.on_write_progress();
    return;
  }
  // The link is down or being taken back: the input waits in input_kept_ for resume().
  if (link_broken_ || resuming_) return;
  terminal_changed(/*by_input=*/true);
  std::string out;
  for (std::size_t at = 0; at < bytes.size(); at += kInChunk) {
    FrameWriter(out).begin(Type::in).raw(bytes.substr(at, kInChunk)).end();
  }
  send(std::move(out));
}

Status StreamChannel::resize(unsigned rows, unsigned cols) {
  rows_ = rows;
  cols_ = cols;
  if (link_broken_ && may_reconnect()) {
    resize_pending_ = true;  // the far terminal takes it once the link is back
    return {};
  }
  if (link_broken_) return make_error(Code::BACKEND_FAILED, "the link to the far helper is gone");
  std::string out;
  FrameWriter(out).begin(Type::resize).u16(static_cast<std::uint16_t>(rows)).u16(static_cast<std::uint16_t>(cols)).end();
  send(std::move(out));
  terminal_changed(/*by_input=*/false);
  return {};
}

Status StreamChannel::signal_group(pid_t pgid, int signo) {
  if (reconnecting_) {
    return make_error(Code::BACKEND_FAILED, "the link to the far helper is being restored (" + *reconnecting_ +
                                                "): signal again once the session runs");
  }
  if (link_broken_) return make_error(Code::BACKEND_FAILED, "the link to the far helper is gone");
  std::string out;
  FrameWriter(out).begin(Type::signal).i32(pgid).i32(signo).end();
  send(std::move(out));
  terminal_changed(/*by_input=*/false);
  return {};
}

void StreamChannel::mark_readers() { send_mark(1); }

// The far side knows its shell: MARK 2 asks for its baseline alone, a stat and a schedstat
// read where the group's walk is a children file and a status file per process besides.
void StreamChannel::mark_shell_reader(pid_t) { send_mark(2); }

void StreamChannel::send_mark(std::uint8_t mark) {
  forget_pending_ = false;  // a new baseline replaces the old one on the far side anyway
  marked_ = true;
  mark_at_ = bytes_queued_;
  std::string out;
  FrameWriter(out).begin(Type::mark).u8(mark).end();
  send(std::move(out));
  terminal_changed(/*by_input=*/false);
}

// The far side's baseline counts only in a probe's answer, so forgetting it waits for the
// next PROBE (and a MARK 1 before that makes it moot): every send ends with a forget, and
// over ssh a frame of its own wakes ssh, sshd and the far helper for nothing.
void StreamChannel::forget_readers() {
  forget_pending_ = true;
  marked_ = false;
}

void StreamChannel::kill_tree(std::chrono::milliseconds grace) {
  if (quiescent_) return;
  kill_grace_ = static_cast<std::uint32_t>(grace.count());  // again after a reconnect
  // The next failed attempt applies the shorter deadline (never from inside this call).
  if (reconnecting_ && kill_asked_at_ == 0) kill_asked_at_ = ev_now(loop_);
  std::string out;
  FrameWriter(out).begin(Type::kill).u32(static_cast<std::uint32_t>(grace.count())).end();
  send(std::move(out));
}

// ---- the far terminal's facts ------------------------------------------------------------

void StreamChannel::invalidate_facts() {
  stale_before_ = next_seq_;
  reading_ = false;
}

// The bound facts (foreground group, modes, unread input, cwd) are current once output
// read after the far side took everything sent so far has arrived: only a WRITTEN proves
// that (frames keep their order, so output after it was read after the write), hence a
// resize, a signal or a mark alone waits for the next write or for a probe's answer.
void StreamChannel::terminal_changed(bool by_input) {
  invalidate_facts();
  bound_current_ = false;
  bound_after_written_ = false;
  await_written_ = by_input ? std::optional<std::uint64_t>(bytes_queued_) : std::nullopt;
}

void StreamChannel::note_bound_facts() {
  if (bound_after_written_) bound_current_ = true;
}

void StreamChannel::refresh(Need need) const {
  // Asking is not a change of the channel's state the session can see: const to callers.
  auto* self = const_cast<StreamChannel*>(this);
  if (facts_fresh() || link_broken_ || !welcomed_) return;
  // The terminal's facts bound to output read after the latest write are what a local
  // channel would answer for that output: no question needed. (A PROBE asked at every
  // send's prompt cost the far side a whole stdin probe, right before the next send's
  // input when the sends come back to back.)
  if (need == Need::bound_facts && bound_current_) return;
  if (next_seq_ > stale_before_) return;  // a fresh probe is on its way
  std::string out;
  if (forget_pending_) {
    FrameWriter(out).begin(Type::mark).u8(0).end();
    self->forget_pending_ = false;
  }
  FrameWriter(out).begin(Type::probe).u32(++self->next_seq_).end();
  self->send(std::move(out));
}

TerminalFacts StreamChannel::terminal_facts(FactSet wanted) const {
  // The facts bound to output are asked for only where a local channel would read the
  // terminal; unread input only while there is a count to refresh.
  if (((wanted & kFactForeground) && !output_ended_) || (wanted & kFactModes) ||
      ((wanted & kFactInputUnread) && !output_ended_ && facts_.input_unread >= 0)) {
    refresh(Need::bound_facts);
  }
  if (wanted & kFactLeaderIsShell) refresh(Need::probe_answer);
  TerminalFacts f = facts_;
  if (output_ended_ || f.foreground <= 0) f.foreground = -1;
  if (output_ended_) f.input_unread = -1;
  // Unknown until a fresh answer names this leader: keep treating it as the shell's copy
  // (the caller holds a signal meanwhile, within its own bound).
  f.flags &= static_cast<std::uint8_t>(~frames::kStateLeaderIsShell);
  if (!facts_fresh() || leader_is_shell_) f.flags |= frames::kStateLeaderIsShell;
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

bool StreamChannel::foreground_reading() {
  refresh(Need::probe_answer);
  if (!facts_fresh() || !reading_) {
    // Not proven now: the next question gets a newer answer.
    if (facts_fresh()) invalidate_facts();
    refresh(Need::probe_answer);
    return false;
  }
  return true;
}

}  // namespace dshpty::shell
