// `dshpty-supervisor --stdio`: the link to the host and the host's frames (the whole
// design: supervisor/bridge.hpp). It is a program, not the library: it may print one line
// to stderr before exiting, and it ignores SIGPIPE (a broken link is an error from write,
// not a death).
#include "supervisor/stdio_bridge.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "proc/stdin_probe.hpp"
#include "supervisor/attach_relay.hpp"
#include "supervisor/bridge.hpp"

namespace dshpty::shell {

namespace {
constexpr int kStdin = 0;
constexpr int kStdout = 1;
// After the link ended: how long the tree's kill may take before the program gives up
// waiting (closing the local face's socket then makes it finish the kill on its own).
constexpr std::chrono::seconds kKillBound{10};
}  // namespace

std::string clip(std::string text) {
  constexpr std::size_t kMaxText = 4096;
  if (text.size() > kMaxText) text.resize(kMaxText);
  return text;
}

Bridge::Bridge(struct ev_loop* loop, std::string state_dir, double hold_ms)
    : loop_(loop), state_dir_(std::move(state_dir)), hold_ms_(hold_ms), link_(loop, *this) {
  link_timer_.bind<&Bridge::on_link_timeout>(loop_, this);
  kill_bound_.bind<&Bridge::on_kill_bound>(loop_, this);
  hold_timer_.bind<&Bridge::queue_flush>(loop_, this);
  port_watch_timer_.bind<&Bridge::on_port_watch_tick>(loop_, this);
}

Bridge::~Bridge() {
  for (int fd : {kStdin, kStdout}) {
    if (saved_flags_[fd] >= 0) ::fcntl(fd, F_SETFL, saved_flags_[fd]);
  }
}

frames::Welcome Bridge::welcome() const {
  return {frames::kProtocolVersion,
          (proc::StdinProbe::supported() ? frames::kCapProvesReaders : 0) | frames::kCapTakeBack |
              frames::kCapKeepsShown | frames::kCapJobs | frames::kCapLimits | frames::kCapStopAt,
          frames::helper_build()};
}

int Bridge::run() {
  for (int fd : {kStdin, kStdout}) {
    int flags = ::fcntl(fd, F_GETFL);
    saved_flags_[fd] = flags;
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
      std::fprintf(stderr, "dshpty-supervisor --stdio: stdin/stdout: %s\n", std::strerror(errno));
      return 1;
    }
  }
  link_.open(kStdin, kStdout);
  link_.queue(welcome());
  queue_flush();
  ev_run(loop_, 0);
  return exit_code_;
}

// ---- the link ----------------------------------------------------------------------------

void Bridge::on_link_end(link::LinkEnd end, const std::string& why) {
  if (end == link::LinkEnd::bad_stream) return protocol_error(why);
  link_ended("");  // EOF, or EPIPE: nobody reads us any more
}

void Bridge::on_received() {
  if (link_timer_.active()) link_timer_.again();
}

void Bridge::on_flushed() {
  update_flow();
  if (link_.outbox_size() == 0 && keeper_) pump_ring();
}

void Bridge::protocol_error(const std::string& why) {
  if (link_down()) return;
  link_.queue(frames::ErrorFrame{static_cast<std::uint32_t>(frames::ErrorCode::protocol_error),
                                 clip("protocol error: " + why)});
  link_.flush();
  link_ended("protocol error: " + why);
}

void Bridge::link_ended(const std::string& why) {
  if (link_down()) return;
  link_state_ = HostLink::down;
  if (keeper_ && ending_ == Ending::none) return detach(why);
  if (!why.empty()) {
    // A broken protocol or a silent host: the program's status says it failed, even
    // once its tree is proven gone.
    link_failed_ = true;
    std::fprintf(stderr, "dshpty-supervisor --stdio: %s\n", why.c_str());
  }
  link_.break_link(why);
  link_timer_.stop();
  if (!channel_ || channel_->quiescent()) return finish(0);
  kill_now();
}

void Bridge::kill_now() {
  channel_->pause_output(false);
  channel_->kill_tree(std::chrono::milliseconds(0));
  kill_bound_.start_if_idle(kKillBound);  // a kill under way keeps its deadline
}

void Bridge::on_link_timeout() {
  link_ended("no frame from the host for " + std::to_string(link_timeout_ms_) + " ms");
}

void Bridge::on_kill_bound() {
  // Destroying the channel closes the local face's socket: it finishes the kill alone.
  if (keeper_ && link_down()) {
    keeper_->bury(std::nullopt, SIGKILL,
                  ending_ == Ending::expired ? "killed after linger" : "exited while no host held it",
                  "unconfirmed: the kill was left to the session's subreaper after " +
                      std::to_string(kKillBound.count()) + " s");
  }
  finish(1);
}

void Bridge::finish(int code) {
  exit_code_ = code != 0 || link_failed_ ? (code != 0 ? code : 1) : 0;
  kill_bound_.stop();
  link_timer_.stop();
  end_hold();
  link_.stop_reading();
  if (!link_down()) link_.flush_blocking(kLastWords);
  link_.hold();
  channel_.reset();
  ev_break(loop_, EVBREAK_ALL);
}

void Bridge::finish_quiescent() {
  link_.queue(frames::Empty{frames::Type::quiescent});
  link_.flush_blocking(kLastWords);
  finish(0);
}

void Bridge::close_link() {
  const bool borrowed = !link_.owns_fd();
  link_.close();
  if (borrowed) {
    // The first link is stdin/stdout: /dev/null takes their place, so no later fd gets
    // those numbers and nothing reads or writes a stale pipe.
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      ::dup3(null, kStdin, O_CLOEXEC);
      ::dup3(null, kStdout, O_CLOEXEC);
      if (null > kStdout) ::close(null);
    }
  }
}

// ---- the host's frames -------------------------------------------------------------------

void Bridge::on_hello(std::string_view payload) {
  auto hello = frames::decode<frames::Hello>(payload);
  if (!hello) return protocol_error("bad HELLO");
  link_state_ = HostLink::opening;
  frames::encode(hello_frame_, *hello);
  if (hello->version != frames::kProtocolVersion) {
    link_.queue(frames::ErrorFrame{static_cast<std::uint32_t>(frames::ErrorCode::version_mismatch),
                                   "protocol version " + std::to_string(hello->version) + "; this helper speaks " +
                                       std::to_string(frames::kProtocolVersion)});
    link_.flush_blocking(kLastWords);
    link_state_ = HostLink::down;
    return finish(1);
  }
  link_timeout_ms_ = hello->link_timeout_ms;
  if (link_timeout_ms_ > 0) link_timer_.again(std::chrono::milliseconds(link_timeout_ms_));
}

void Bridge::on_frame(const frames::Frame& f) {
  using frames::decode;
  using frames::Type;
  const std::string_view p = f.payload;
  if (link_state_ == HostLink::greeting && f.type != Type::hello) return protocol_error("the host did not start with HELLO");
  if (link_state_ == HostLink::opening && f.type == Type::attach) return relay(f);
  if (link_state_ == HostLink::opening && f.type != Type::open) return protocol_error("the host did not OPEN first");
  switch (f.type) {
    case Type::hello:
      if (link_state_ != HostLink::greeting) return protocol_error("bad HELLO");
      return on_hello(p);
    case Type::open:
      return open(p);
    case Type::in: {
      const std::string_view bytes = p;
      // Counted whatever becomes of it: a reconnecting host sends its input on from here.
      in_received_ += bytes.size();
      if (!channel_) return;  // the shell never started: nobody reads
      // What the terminal printed before this write goes out first, so the host never
      // takes it for output that followed the write.
      drain(ProcessChannel::kProbeDrainReads);
      begin_hold();
      note_input(in_received_ - bytes.size());
      channel_->write(bytes);
      return;
    }
    case Type::resize: {
      auto r = decode<frames::Resize>(p);
      if (!r || r->rows == 0 || r->cols == 0) return protocol_error("bad RESIZE");
      if (channel_ && channel_->resize(r->rows, r->cols)) {
        rows_ = r->rows;
        cols_ = r->cols;
        if (keeper_) keeper_->set_size(rows_, cols_);
      }
      return;
    }
    case Type::signal: {
      auto s = decode<frames::Signal>(p);
      if (!s) return protocol_error("bad SIGNAL");
      // Refused, not fatal: group 0 or below would be this program's own (or every
      // process's), a number outside 1..NSIG-1 no signal. The group may also be gone by
      // now (the job ended): nothing to do then either.
      if (s->pgid <= 0 || s->signo <= 0 || s->signo >= NSIG) return;
      if (channel_) (void)channel_->signal_group(s->pgid, s->signo);
      return;
    }
    case Type::mark: {
      auto m = decode<frames::Mark>(p);
      if (!m) return protocol_error("bad MARK");
      if (!channel_) return;
      if (m->mark == 0) {
        channel_->forget_readers();
      } else if (m->mark == 2 && shell_pid_ > 0) {
        channel_->mark_shell_reader(shell_pid_);  // the shell alone, at its idle prompt
      } else {
        channel_->mark_readers();
      }
      return;
    }
    case Type::probe: {
      auto q = decode<frames::Probe>(p);
      if (!q) return protocol_error("bad PROBE");
      return answer_probe(q->seq);
    }
    case Type::ack: {
      auto a = decode<frames::Ack>(p);
      if (!a || a->offset > sent_) return protocol_error("bad ACK");
      if (a->offset > acked_) acked_ = a->offset;
      update_flow();
      if (keeper_) pump_ring();  // the window moved: more of the ring may go
      return;
    }
    case Type::kill: {
      auto k = decode<frames::Kill>(p);
      if (!k) return protocol_error("bad KILL");
      if (!channel_) return finish_quiescent();  // nothing was started
      if (ending_ == Ending::none) ending_ = Ending::killing;
      channel_->kill_tree(std::chrono::milliseconds(k->grace_ms));
      return;
    }
    case Type::linger:
      return start_linger(p);
    case Type::take_back: {
      auto t = decode<frames::TakeBack>(p);
      if (!t) return protocol_error("bad TAKE_BACK");
      // The host's IN before this frame was all written or queued here: the count covers it.
      std::size_t taken = 0;
      if (channel_) taken = channel_->take_back_input(t->own).value_or(0);
      link_.queue(frames::Taken{t->own, static_cast<std::uint32_t>(taken)});
      queue_flush();
      return;
    }
    case Type::sending: {
      auto s = decode<frames::Sending>(p);
      if (!s) return protocol_error("bad SENDING");
      if (keeper_) keeper_->note_send(s->live);
      return;
    }
    case Type::shown: {
      auto s = decode<frames::Shown>(p);
      if (!s) return protocol_error("bad SHOWN");
      if (keeper_) keeper_->note_shown(s->offset);
      return;
    }
    case Type::ping: {
      if (!frames::decode_empty(p)) return protocol_error("bad PING");
      link_.queue(frames::Empty{Type::pong});
      return queue_flush();
    }
    default:
      if (job_frame(f)) return;
      return protocol_error(std::string("unexpected frame ") + frames::type_name(static_cast<std::uint8_t>(f.type)));
  }
}

}  // namespace dshpty::shell

int stdio_bridge_main(const char* state_dir, double hold_ms, RecordHandoff record) {
  ::signal(SIGPIPE, SIG_IGN);
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
  if (!loop) {
    std::fprintf(stderr, "dshpty-supervisor --stdio: no event loop\n");
    return 1;
  }
  int code;
  std::optional<dshpty::shell::RelayOrder> relay;
  {
    dshpty::shell::Bridge bridge(loop, state_dir ? state_dir : "", hold_ms);
    if (record.fd >= 0) {
      bridge.record_while_detached(std::make_unique<dshpty::shell::record::DetachedWriter>(
          dshpty::proc::UniqueFd(record.fd), record.start, record.max_bytes));
    }
    code = bridge.run();
    relay = std::move(bridge.relay_order());
  }
  ev_loop_destroy(loop);
  if (relay) return dshpty::shell::run_attach_relay(state_dir ? state_dir : "", relay->key, std::move(relay->first_bytes));
  return code;
}
