// `dshpty-supervisor --stdio`: the far side of a remote session (link/frames.hpp is the
// protocol; docs/remote.md the design). It runs the very channel a local session runs
// (LocalChannel: the PTY, the stdin probe, this program again in its local face as the
// session's subreaper) on a libev loop of its own, and only translates: the host's frames
// into channel calls, the channel's events and facts into frames. So a remote session's
// readiness, kill and proof are the local code's, one byte pipe away.
//
// The link is stdin/stdout. Its end (EOF, an error, a bad frame, no frame for the host's
// link timeout) is the order to kill the tree with no grace; the program exits once the
// tree is proven gone (or after a bound: the local face's own EOF rule then finishes it).
// Unless the host sent LINGER (docs/outlive.md): then the end of a link detaches, output
// goes on into the keeper's ring, and a later host arrives through the keeper's
// rendezvous socket (linger/linger_keeper.hpp) as the new link.
// It is a program, not the library: it may print one line to stderr before exiting, and
// it ignores SIGPIPE (a broken link is an error from write, not a death).
#include "supervisor/stdio_bridge.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "link/frames.hpp"
#include "local/launch_plan.hpp"
#include "local/local_channel.hpp"
#include "local/environment.hpp"
#include "proc/procfs.hpp"
#include "proc/stdin_probe.hpp"
#include "supervisor/attach_relay.hpp"
#include "linger/linger_keeper.hpp"
#include "supervisor/prompt_hold.hpp"

extern char** environ;

namespace dshpty::shell {
namespace {

using frames::FrameWriter;
using frames::PayloadReader;
using frames::Type;

constexpr int kStdin = 0;
constexpr int kStdout = 1;
// The outbox may hold this much before the terminal stops being read (besides the window).
constexpr std::size_t kOutboxBound = 2 * frames::kMaxFrame;
// After the link ended: how long the tree's kill may take before the program gives up
// waiting (closing the local face's socket then makes it finish the kill on its own).
constexpr double kKillBoundSeconds = 10.0;
// A held outbox (supervisor/prompt_hold.hpp) goes out once it holds this much: output that
// fast streams as it comes.
constexpr std::size_t kMaxHeldBytes = 16 * 1024;
// How long the last frames (QUIESCENT, an ERROR) may wait for a slow link before exiting.
constexpr int kLastWordsMs = 10'000;
// Reads a probe may take to drain the terminal before it measures.
constexpr int kProbeDrainReads = 64;
constexpr std::uint32_t kMaxEntries = frames::kMaxFrame / 4;

using Facts = frames::TerminalFacts;

// The SigIgn mask of /proc/<pid>/status, or 0.
std::uint64_t ignored_signals(pid_t pid) {
  char buf[2048];
  if (pid <= 0 || procfs::read_small(procfs::Path(pid).text("/status").c_str(), buf, sizeof buf) <= 0) return 0;
  const char* line = std::strstr(buf, "\nSigIgn:");
  return line ? std::strtoull(line + 8, nullptr, 16) : 0;
}

// A message for a frame: an error's words may carry a path or an argv from OPEN, and a
// frame must stay within kMaxFrame.
std::string clip(std::string text) {
  constexpr std::size_t kMaxText = 4096;
  if (text.size() > kMaxText) text.resize(kMaxText);
  return text;
}

std::string self_executable() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path);
  return n > 0 && static_cast<std::size_t>(n) < sizeof path ? std::string(path, static_cast<std::size_t>(n)) : "";
}

// A host that opened with ATTACH: the relay to the lingering helper runs once the loop is
// left (supervisor/attach_relay.hpp).
struct RelayOrder {
  std::string key;
  std::string first_bytes;
};

class Bridge final : private ChannelEvents {
 public:
  Bridge(struct ev_loop* loop, std::string state_dir, double hold_ms)
      : loop_(loop), state_dir_(std::move(state_dir)), hold_ms_(hold_ms) {
    ev_io_init(&in_io_, &Bridge::on_stdin, link_in_, EV_READ);
    ev_io_init(&out_io_, &Bridge::on_stdout, link_out_, EV_WRITE);
    ev_prepare_init(&flush_before_poll_, &Bridge::on_before_poll);
    flush_before_poll_.data = this;
    ev_timer_init(&link_timer_, &Bridge::on_link_timeout, 0., 0.);
    ev_timer_init(&kill_bound_, &Bridge::on_kill_bound, kKillBoundSeconds, 0.);
    ev_timer_init(&hold_timer_, &Bridge::on_hold_timeout, 0., 0.);
    in_io_.data = out_io_.data = link_timer_.data = kill_bound_.data = hold_timer_.data = this;
  }

  // The link's file descriptions may be shared with whoever started us (a terminal, a
  // pipe of a container runtime): their O_NONBLOCK is put back as it was.
  ~Bridge() {
    for (int fd : {kStdin, kStdout}) {
      if (saved_flags_[fd] >= 0) ::fcntl(fd, F_SETFL, saved_flags_[fd]);
    }
  }

  int run() {
    for (int fd : {kStdin, kStdout}) {
      int flags = ::fcntl(fd, F_GETFL);
      saved_flags_[fd] = flags;
      if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        std::fprintf(stderr, "dshpty-supervisor --stdio: stdin/stdout: %s\n", std::strerror(errno));
        return 1;
      }
    }
    std::string build = "dshpty-supervisor " __DATE__;
    FrameWriter(outbox_)
        .begin(Type::welcome)
        .u32(frames::kVersion)
        .u32((proc::StdinProbe::supported() ? frames::kCapProvesReaders : 0) | frames::kCapTakeBack |
            frames::kCapKeepsShown)
        .str(build)
        .end();
    queue_flush();
    ev_io_start(loop_, &in_io_);
    ev_run(loop_, 0);
    return exit_code_;
  }

  std::optional<RelayOrder>& relay_order() { return relay_; }

 private:
  // ---- the link ------------------------------------------------------------------------

  static void on_stdin(struct ev_loop*, ev_io* w, int) { static_cast<Bridge*>(w->data)->read_link(); }
  static void on_stdout(struct ev_loop*, ev_io* w, int) { static_cast<Bridge*>(w->data)->flush(); }
  static void on_before_poll(struct ev_loop* loop, ev_prepare* w, int) {
    ev_prepare_stop(loop, w);
    // Never during a hold: begin_hold stops this watcher, and queue_flush ends a hold
    // before it starts it.
    static_cast<Bridge*>(w->data)->flush();
  }
  static void on_hold_timeout(struct ev_loop*, ev_timer* w, int) { static_cast<Bridge*>(w->data)->queue_flush(); }

  void read_link() {
    char buf[64 * 1024];
    for (int i = 0; i < 8 && !link_down_; ++i) {
      ssize_t n = ::read(link_in_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) return link_ended("");
      if (ev_is_active(&link_timer_)) ev_timer_again(loop_, &link_timer_);
      reader_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      while (!link_down_) {
        auto f = reader_.next();
        if (!f) break;
        handle(*f);
      }
      if (!reader_.error().empty()) return protocol_error(reader_.error());
    }
  }

  void flush() {
    while (!outbox_.empty()) {
      ssize_t n = ::write(link_out_, outbox_.data(), outbox_.size());
      if (n > 0) {
        outbox_.erase(0, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        ev_io_start(loop_, &out_io_);
        update_flow();
        return;
      }
      // EPIPE: nobody reads us any more.
      outbox_.clear();
      ev_io_stop(loop_, &out_io_);
      link_ended("");
      return;
    }
    ev_io_stop(loop_, &out_io_);
    update_flow();
    if (keeper_) pump_ring();
  }

  // Frames made while handling one event go out together, in one write once the loop is
  // back in its poll: a TCP link (ssh) then carries one segment where separate small writes
  // would wait on Nagle and delayed ACKs, which cost milliseconds a send. The write is made
  // by a prepare watcher, before libev updates the kernel and polls, so no EPOLLOUT is asked
  // for and waited on; the writable watcher is the fallback for a full link (and for frames
  // made while the prepare watchers run), stopped unseen when the prepare flush empties
  // the outbox (remote/stream_channel.cpp does the same on the host).
  void queue_flush() {
    end_hold();
    if (!outbox_.empty() && !link_down_) {
      ev_io_start(loop_, &out_io_);
      ev_prepare_start(loop_, &flush_before_poll_);
    }
    update_flow();
  }

  // Output and WRITTEN: held while a send waits for its prompt (supervisor/prompt_hold.hpp),
  // else out like any frame.
  void queue_output() {
    if (hold_.holding() && outbox_.size() <= kMaxHeldBytes) return update_flow();
    queue_flush();
  }

  // The host's input is about to be written: what the terminal answers waits for the
  // prompt's end, for at most hold_ms_ from the first input of the hold.
  void begin_hold() {
    if (!hold_.begin()) return;
    if (!ev_is_active(&hold_timer_)) {
      // Set anew each time: a timer that fired keeps libev's spent remainder, not its length.
      ev_timer_set(&hold_timer_, hold_ms_ / 1000.0, 0.);
      ev_timer_start(loop_, &hold_timer_);
    }
    // A flush already queued this turn (output drained before the write) joins the hold.
    ev_prepare_stop(loop_, &flush_before_poll_);
    ev_io_stop(loop_, &out_io_);
  }

  void end_hold() {
    hold_.end();
    ev_timer_stop(loop_, &hold_timer_);
  }

  // One non-blocking pass over the outbox, whatever the link's state.
  void flush_once() {
    while (!outbox_.empty()) {
      ssize_t n = ::write(link_out_, outbox_.data(), outbox_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      outbox_.erase(0, static_cast<std::size_t>(n));
    }
  }

  // Before exiting: whatever the outbox holds goes out, waiting for the link (nothing else
  // is left to do), but at most kLastWordsMs: a stalled link must not keep us alive.
  void flush_blocking() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLastWordsMs);
    while (!outbox_.empty()) {
      flush_once();
      if (outbox_.empty()) break;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd out{link_out_, POLLOUT, 0};
      if (left.count() <= 0 || ::poll(&out, 1, static_cast<int>(left.count())) <= 0 ||
          (out.revents & (POLLERR | POLLHUP))) {
        break;
      }
    }
  }

  // Output is read from the terminal only while the host has acknowledged all but a
  // window of it and the outbox is drained enough: the program writing blocks otherwise.
  void update_flow() {
    if (!channel_) return;
    // A lingering session with no host reads on (its ring drops the oldest); with one, the
    // window counts from the ring's end, replay included.
    const std::uint64_t unacked = keeper_ ? keeper_->ring().end() - std::min(acked_, keeper_->ring().end()) : sent_ - acked_;
    const bool pause = (!keeper_ || !link_down_) && (unacked > frames::kWindow || outbox_.size() > kOutboxBound);
    if (pause != paused_) {
      paused_ = pause;
      channel_->pause_output(pause);
    }
  }

  void protocol_error(const std::string& why) {
    if (link_down_) return;
    FrameWriter(outbox_).begin(Type::error).u32(3).str(clip("protocol error: " + why)).end();
    flush();
    link_ended("protocol error: " + why);
  }

  // The link is gone: kill the tree with no grace and exit once it is proven gone.
  void link_ended(const std::string& why) {
    if (link_down_) return;
    link_down_ = true;
    if (keeper_ && !killing_) return detach(why);
    if (!why.empty()) {
      // A broken protocol or a silent host: the program's status says it failed, even
      // once its tree is proven gone.
      link_failed_ = true;
      std::fprintf(stderr, "dshpty-supervisor --stdio: %s\n", why.c_str());
    }
    ev_io_stop(loop_, &in_io_);
    ev_timer_stop(loop_, &link_timer_);
    if (!channel_ || channel_->quiescent()) return finish(0);
    channel_->pause_output(false);
    channel_->kill_tree(std::chrono::milliseconds(0));
    ev_timer_start(loop_, &kill_bound_);
  }

  static void on_link_timeout(struct ev_loop*, ev_timer* w, int) {
    auto* b = static_cast<Bridge*>(w->data);
    b->link_ended("no frame from the host for " + std::to_string(b->link_timeout_ms_) + " ms");
  }

  static void on_kill_bound(struct ev_loop*, ev_timer* w, int) {
    // Destroying the channel closes the local face's socket: it finishes the kill alone.
    auto* b = static_cast<Bridge*>(w->data);
    if (b->keeper_ && b->link_down_) {
      b->keeper_->bury(std::nullopt, SIGKILL, b->expired_ ? "killed after linger" : "exited while no host held it",
                       "unconfirmed: the kill was left to the session's subreaper after " +
                           std::to_string(static_cast<int>(kKillBoundSeconds)) + " s");
    }
    b->finish(1);
  }

  // ---- lingering (docs/outlive.md) -----------------------------------------------------

  void start_linger(PayloadReader& r) {
    LingerSpec spec;
    spec.seconds = r.u32();
    spec.ring_bytes = r.u64();
    spec.state_dir = std::string(r.str());
    spec.owner = std::string(r.str());
    const std::string name(r.str());
    spec.type = std::string(r.str());
    if (!r.done() || keeper_ || spec.seconds == 0) return protocol_error("bad LINGER");
    if (!name.empty()) spec.name = name;
    // A remote host names no directory (its own paths mean nothing here): this machine's
    // --state-dir, else the default.
    if (spec.state_dir.empty()) spec.state_dir = state_dir_;
    spec.mark_nonce = mark_nonce_;
    spec.shell = shell_name_;
    auto keeper = LingerKeeper::start(
        loop_, std::move(spec),
        {[this](proc::UniqueFd link, frames::FrameReader reader, AttachRequest request) {
           adopt(std::move(link), std::move(reader), request);
         },
         [this] {
           expired_ = true;
           end_lingering();
         }});
    if (!keeper) {
      // The session cannot linger as asked: it does not run at all.
      FrameWriter(outbox_).begin(Type::error).u32(frames::kErrorLingerUnsafe).str(clip(keeper.error()->message)).end();
      flush();
      return link_ended("");
    }
    keeper_ = std::move(*keeper);
    keeper_->set_size(rows_, cols_);
    if (shell_pid_ > 0) keeper_->set_shell_pid(shell_pid_);
    // Out of the session whoever started us made (sshd makes one per connection), so that
    // its end does not take the session along. A session leader already is in its own.
    if (::getsid(0) != ::getpid()) (void)::setsid();
    FrameWriter(outbox_).begin(Type::lingering).str(keeper_->key()).str(keeper_->token()).end();
    queue_flush();
  }

  // The host went away (EOF, an error, silence): the session waits for the next one.
  void detach(const std::string& why) {
    if (!why.empty()) std::fprintf(stderr, "dshpty-supervisor --stdio: %s; lingering\n", why.c_str());
    ev_io_stop(loop_, &in_io_);
    ev_io_stop(loop_, &out_io_);
    ev_timer_stop(loop_, &link_timer_);
    outbox_.clear();
    reader_ = frames::FrameReader();
    close_link();
    replaying_ = false;
    keeper_->set_attached(false);
    if (exited_) return end_lingering();
    update_flow();
  }

  void close_link() {
    if (link_owned_.valid()) {
      link_owned_.reset();
    } else {
      // The first link is stdin/stdout: /dev/null takes their place, so no later fd gets
      // those numbers and nothing reads or writes a stale pipe.
      int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      if (null >= 0) {
        ::dup3(null, kStdin, O_CLOEXEC);
        ::dup3(null, kStdout, O_CLOEXEC);
        if (null > kStdout) ::close(null);
      }
    }
    link_in_ = link_out_ = -1;
  }

  // A connection that passed every check takes the session over: the host holding it (if
  // any) loses its link, the new one gets the ring from its oldest byte, then live output.
  void adopt(proc::UniqueFd link, frames::FrameReader reader, AttachRequest request) {
    const std::uint32_t timeout_ms = request.link_timeout_ms;
    if (!link_down_) {
      ev_io_stop(loop_, &in_io_);
      ev_io_stop(loop_, &out_io_);
      ev_timer_stop(loop_, &link_timer_);
      outbox_.clear();
      close_link();
    }
    link_owned_ = std::move(link);
    link_in_ = link_out_ = link_owned_.get();
    ev_io_set(&in_io_, link_in_, EV_READ);
    ev_io_set(&out_io_, link_out_, EV_WRITE);
    reader_ = std::move(reader);
    link_down_ = false;
    link_timeout_ms_ = timeout_ms;
    if (timeout_ms > 0) {
      ev_timer_set(&link_timer_, 0., timeout_ms / 1000.0);
      ev_timer_again(loop_, &link_timer_);
    }
    keeper_->set_attached(true);
    const auto& ring = keeper_->ring();
    const std::uint64_t to = ring.end();
    // A new host gets the ring from its oldest byte; the host that held the session goes on
    // from what it consumed (never past the end: it cannot have consumed more).
    const std::uint64_t from =
        request.resume ? std::clamp(request.output_from, ring.start(), to) : ring.start();
    // Output that host never got and the ring no longer holds: exact for a reconnect, an
    // upper bound for a new host (hosts acknowledge in steps).
    const std::uint64_t seen = request.resume ? std::min(request.output_from, to) : acked_;
    const std::uint64_t gap = from > seen ? from - seen : 0;
    acked_ = std::max(acked_, from);
    FrameWriter(outbox_)
        .begin(Type::welcome)
        .u32(frames::kVersion)
        .u32((proc::StdinProbe::supported() ? frames::kCapProvesReaders : 0) | frames::kCapTakeBack |
            frames::kCapKeepsShown)
        .str("dshpty-supervisor " __DATE__)
        .end();
    FrameWriter(outbox_)
        .begin(Type::attached)
        .u64(from)
        .u64(to)
        .u64(gap)
        .u8(keeper_->send_live() ? 1 : 0)
        .i32(shell_pid_)
        .u64(in_received_)
        .str(keeper_->token())
        .u64(keeper_->shown())
        .end();
    keeper_->note_send(false);
    sent_ = from;
    output_ended_sent_ = false;
    replaying_ = true;
    replay_to_ = to;
    ev_io_start(loop_, &in_io_);
    pump_ring();
    // The ring no longer reaches back to the start: a full-screen program redraws its
    // screen on SIGWINCH, so the rebuilt screen is whole again.
    if ((request.resume ? gap > 0 : from > 0) && channel_ && !exited_) {
      const pid_t fg = channel_->foreground_group();
      auto modes = channel_->terminal_modes();
      if (fg > 0 && modes && !modes->canonical) (void)channel_->signal_group(fg, SIGWINCH);
    }
    while (!link_down_) {
      auto f = reader_.next();
      if (!f) break;
      handle(*f);
    }
  }

  // Sends ring output the link may take now (within the window); after a replay's last
  // byte, what a fresh start says: STARTED, the facts, and how the shell ended if it did.
  void pump_ring() {
    if (!keeper_ || link_down_) return;
    auto& ring = keeper_->ring();
    if (sent_ < ring.start()) sent_ = ring.start();
    while (sent_ < ring.end() && sent_ < acked_ + frames::kWindow && outbox_.size() < kOutboxBound) {
      const std::string_view chunk = ring.view(sent_, frames::kMaxOutChunk);
      FrameWriter(outbox_).begin(Type::out).u64(sent_).raw(chunk).end();
      sent_ += chunk.size();
    }
    if (replaying_ && sent_ >= replay_to_) {
      replaying_ = false;
      // Input written while no host was attached was never reported: a reconnecting host
      // waits for it to call its send's input written. After the replay, so the output
      // it already has cannot be taken for output read after that write.
      if (channel_) FrameWriter(outbox_).begin(Type::written).u64(channel_->bytes_written()).end();
      FrameWriter(outbox_).begin(Type::started).i32(shell_pid_).end();
      if (channel_) send_state(0, cheap_facts());
      if (exited_) {
        FrameWriter(outbox_)
            .begin(Type::exited)
            .u8(exited_->signal ? 1 : 0)
            .i32(exited_->signal ? *exited_->signal : exited_->exit_code.value_or(0))
            .end();
      }
    }
    if (!replaying_ && output_ended_ && !output_ended_sent_ && sent_ == ring.end()) {
      output_ended_sent_ = true;
      FrameWriter(outbox_).begin(Type::output_ended).end();
    }
    queue_output();
  }

  // The session is over with no host attached (linger ran out, or the shell exited): the
  // whole tree is killed; on_quiescent writes the tombstone.
  void end_lingering() {
    if (killing_) return;
    killing_ = true;
    if (!channel_) return finish(0);
    channel_->pause_output(false);
    channel_->kill_tree(std::chrono::milliseconds(0));
    ev_timer_start(loop_, &kill_bound_);
  }

  void finish(int code) {
    exit_code_ = code != 0 || link_failed_ ? (code != 0 ? code : 1) : 0;
    ev_timer_stop(loop_, &kill_bound_);
    ev_timer_stop(loop_, &link_timer_);
    end_hold();
    ev_io_stop(loop_, &in_io_);
    if (!link_down_) flush_blocking();
    ev_io_stop(loop_, &out_io_);
    ev_prepare_stop(loop_, &flush_before_poll_);
    channel_.reset();
    ev_break(loop_, EVBREAK_ALL);
  }

  // ---- the host's frames ---------------------------------------------------------------

  void handle(const frames::Frame& f) {
    PayloadReader r(f.payload);
    if (!hello_ && f.type != Type::hello) return protocol_error("the host did not start with HELLO");
    if (hello_ && !opened_ && f.type == Type::attach) return relay(f);
    if (hello_ && !opened_ && f.type != Type::open) return protocol_error("the host did not OPEN first");
    switch (f.type) {
      case Type::hello: {
        const std::uint32_t version = r.u32();
        const std::uint32_t ping_ms = r.u32();
        const std::uint32_t timeout_ms = r.u32();
        if (!r.done() || hello_) return protocol_error("bad HELLO");
        hello_ = true;
        FrameWriter(hello_frame_).begin(Type::hello).u32(version).u32(ping_ms).u32(timeout_ms).end();
        if (version != frames::kVersion) {
          FrameWriter(outbox_)
              .begin(Type::error)
              .u32(1)
              .str("protocol version " + std::to_string(version) + "; this helper speaks " +
                   std::to_string(frames::kVersion))
              .end();
          flush_blocking();
          link_down_ = true;
          return finish(1);
        }
        link_timeout_ms_ = timeout_ms;
        if (timeout_ms > 0) {
          ev_timer_set(&link_timer_, 0., timeout_ms / 1000.0);
          ev_timer_again(loop_, &link_timer_);
        }
        return;
      }
      case Type::open:
        return open(r);
      case Type::in: {
        std::string_view bytes = r.rest();
        // Counted whatever becomes of it: a reconnecting host sends its input on from here.
        in_received_ += bytes.size();
        if (!channel_) return;  // the shell never started: nobody reads
        // What the terminal printed before this write goes out first, so the host never
        // takes it for output that followed the write.
        drain(kProbeDrainReads);
        begin_hold();
        channel_->write(bytes);
        return;
      }
      case Type::resize: {
        const unsigned rows = r.u16(), cols = r.u16();
        if (!r.done() || rows == 0 || cols == 0) return protocol_error("bad RESIZE");
        if (channel_ && channel_->resize(rows, cols)) {
          rows_ = rows;
          cols_ = cols;
          if (keeper_) keeper_->set_size(rows, cols);
        }
        return;
      }
      case Type::signal: {
        const pid_t pgid = r.i32();
        const int signo = r.i32();
        if (!r.done()) return protocol_error("bad SIGNAL");
        // Refused, not fatal: group 0 or below would be this program's own (or every
        // process's), a number outside 1..NSIG-1 no signal. The group may also be gone by
        // now (the job ended): nothing to do then either.
        if (pgid <= 0 || signo <= 0 || signo >= NSIG) return;
        if (channel_) (void)channel_->signal_group(pgid, signo);
        return;
      }
      case Type::mark: {
        const std::uint8_t mark = r.u8();
        if (!r.done()) return protocol_error("bad MARK");
        if (!channel_) return;
        if (mark == 0) {
          channel_->forget_readers();
        } else if (mark == 2 && shell_pid_ > 0) {
          channel_->mark_shell_reader(shell_pid_);  // the shell alone, at its idle prompt
        } else {
          channel_->mark_readers();
        }
        return;
      }
      case Type::probe: {
        const std::uint32_t seq = r.u32();
        if (!r.done()) return protocol_error("bad PROBE");
        return answer_probe(seq);
      }
      case Type::ack: {
        const std::uint64_t offset = r.u64();
        if (!r.done() || offset > sent_) return protocol_error("bad ACK");
        if (offset > acked_) acked_ = offset;
        update_flow();
        if (keeper_) pump_ring();  // the window moved: more of the ring may go
        return;
      }
      case Type::kill: {
        const std::uint32_t grace = r.u32();
        if (!r.done()) return protocol_error("bad KILL");
        if (!channel_) return finish_quiescent();  // nothing was started
        killing_ = true;
        channel_->kill_tree(std::chrono::milliseconds(grace));
        return;
      }
      case Type::linger:
        return start_linger(r);
      case Type::take_back: {
        const std::uint32_t own = r.u32();
        if (!r.done()) return protocol_error("bad TAKE_BACK");
        // The host's IN before this frame was all written or queued here: the count covers it.
        std::size_t taken = 0;
        if (channel_) taken = channel_->take_back_input(own).value_or(0);
        FrameWriter(outbox_).begin(Type::taken).u32(own).u32(static_cast<std::uint32_t>(taken)).end();
        queue_flush();
        return;
      }
      case Type::sending: {
        const std::uint8_t live = r.u8();
        if (!r.done()) return protocol_error("bad SENDING");
        if (keeper_) keeper_->note_send(live != 0);
        return;
      }
      case Type::shown: {
        const std::uint64_t offset = r.u64();
        if (!r.done()) return protocol_error("bad SHOWN");
        if (keeper_) keeper_->note_shown(offset);
        return;
      }
      case Type::ping: {
        if (!r.done()) return protocol_error("bad PING");
        FrameWriter(outbox_).begin(Type::pong).end();
        return queue_flush();
      }
      default:
        return protocol_error(std::string("unexpected frame ") + frames::type_name(static_cast<std::uint8_t>(f.type)));
    }
  }

  // The host opened with ATTACH: it reconnects to a lingering session over a new transport.
  // This program only relays (supervisor/attach_relay.hpp), once the loop is left.
  void relay(const frames::Frame& f) {
    PayloadReader r(f.payload);
    RelayOrder order;
    order.key = std::string(r.str());
    order.first_bytes = hello_frame_;
    FrameWriter(order.first_bytes).begin(Type::attach).raw(f.payload).end();
    order.first_bytes += reader_.take_rest();
    relay_ = std::move(order);
    link_down_ = true;
    flush_blocking();  // our WELCOME
    ev_io_stop(loop_, &in_io_);
    ev_timer_stop(loop_, &link_timer_);
    ev_break(loop_, EVBREAK_ALL);
  }

  void open(PayloadReader& r) {
    const unsigned rows = r.u16(), cols = r.u16();
    const std::string session_id(r.str());
    const std::string term(r.str());
    const bool has_cwd = r.u8() != 0;
    const std::string cwd(r.str());
    // A count is bounded by what a frame can hold (4 bytes an entry) before anything is
    // reserved for it; a short payload then fails the reader.
    std::vector<std::string> argv;
    const std::uint32_t argc = r.u32();
    if (argc > kMaxEntries) return protocol_error("bad OPEN");
    for (std::uint32_t i = 0; i < argc; ++i) argv.emplace_back(r.str());
    const std::uint32_t envc = r.u32();
    if (envc > kMaxEntries) return protocol_error("bad OPEN");
    std::map<std::string, std::optional<std::string>> overrides;
    for (std::uint32_t i = 0; i < envc; ++i) {
      std::string entry(r.str());
      const auto eq = entry.find('=');
      if (eq == std::string::npos) {
        overrides[entry] = std::nullopt;
      } else {
        overrides[entry.substr(0, eq)] = entry.substr(eq + 1);
      }
    }
    if (!r.done() || argv.empty() || rows == 0 || cols == 0) return protocol_error("bad OPEN");
    opened_ = true;
    rows_ = rows;
    cols_ = cols;
    if (auto nonce = overrides.find("DSHPTY_NONCE"); nonce != overrides.end() && nonce->second) mark_nonce_ = *nonce->second;
    if (hold_ms_ > 0) hold_ = supervisor::PromptHold(mark_nonce_);
    shell_name_ = argv.front().substr(argv.front().rfind('/') + 1);
    const std::string self = self_executable();
    std::optional<std::string> dir;
    if (has_cwd) dir = cwd;
    LocalLaunch launch{direct_launch(self, argv, dir, build_environment(environ, session_id, term, overrides)),
                       rows, cols, argv.front(), dir};
    auto channel = LocalChannel::launch(loop_, *this, std::move(launch));
    if (!channel) {
      FrameWriter(outbox_).begin(Type::start_failed).str(clip(channel.error()->message)).end();
      return queue_flush();
    }
    channel_ = std::move(*channel);
  }

  void drain(int reads) {
    if (!channel_) return;
    for (int i = 0; i < reads && !channel_->output_ended(); ++i) {
      if (!channel_->read_available()) break;
    }
  }

  Facts cheap_facts() const {
    Facts f;
    f.foreground = channel_->foreground_group();
    if (auto modes = channel_->terminal_modes()) {
      f.flags |= frames::kStateModesKnown;
      if (modes->echo) f.flags |= frames::kStateEcho;
      if (modes->canonical) f.flags |= frames::kStateCanonical;
    }
    if (auto unread = channel_->input_unread()) f.input_unread = static_cast<std::int32_t>(*unread);
    if (shell_pid_ > 0) f.cwd = channel_->working_directory(shell_pid_).value_or("");
    f.ignored_signals = last_.ignored_signals;
    return f;
  }

  void send_state(std::uint32_t seq, const Facts& f) {
    FrameWriter(outbox_)
        .begin(Type::state)
        .u32(seq)
        .u64(sent_)
        .facts(f)
        .end();
    last_ = f;
    last_.flags &= static_cast<std::uint8_t>(~(frames::kStateReading | frames::kStateRelaying | frames::kStateLeaderIsShell));
  }

  void answer_probe(std::uint32_t seq) {
    if (!channel_) {
      send_state(seq, Facts{});
      return queue_flush();
    }
    // The output the terminal holds now goes first: the answer follows it. While the window
    // holds output back, some of it may still sit in the terminal, and a reader seen now
    // would be reported ahead of output it printed before reading: not proven then (the
    // host asks again). The pause itself is update_flow's alone.
    drain(kProbeDrainReads);
    Facts f = cheap_facts();
    if (f.foreground > 0) {
      f.ignored_signals = ignored_signals(f.foreground);
      if (!paused_ && channel_->foreground_reading()) f.flags |= frames::kStateReading;
      if (!paused_ && channel_->foreground_relays()) f.flags |= frames::kStateRelaying;
      if (shell_pid_ > 0 && channel_->leader_is_shell_copy(f.foreground, shell_pid_)) {
        f.flags |= frames::kStateLeaderIsShell;
      }
    }
    send_state(seq, f);
    queue_flush();
  }

  void finish_quiescent() {
    FrameWriter(outbox_).begin(Type::quiescent).end();
    flush_blocking();
    finish(0);
  }

  // ---- the channel's events ------------------------------------------------------------

  void on_started(pid_t shell_pid) override {
    shell_pid_ = shell_pid;
    if (keeper_) keeper_->set_shell_pid(shell_pid);
    FrameWriter(outbox_).begin(Type::started).i32(shell_pid).end();
    queue_flush();
  }

  void on_start_failed(Error cause) override {
    FrameWriter(outbox_).begin(Type::start_failed).str(clip(cause->message)).end();
    queue_flush();
  }

  void on_output(std::string_view bytes) override {
    // The prompt's end releases the hold (queue_output then flushes).
    if (hold_.saw_prompt_end(bytes)) end_hold();
    if (keeper_) {
      // Kept for the next host; sent now only when this link is attached and caught up
      // (a replay in progress sends it in its turn, from the ring).
      const bool caught_up = !link_down_ && !replaying_ && sent_ == keeper_->ring().end();
      keeper_->ring().append(bytes);
      if (!caught_up) return pump_ring();
    }
    // The facts of the moment this output was read, before it, when they changed.
    Facts f = cheap_facts();
    if (!(f == last_)) send_state(0, f);
    while (!bytes.empty()) {
      const std::string_view chunk = bytes.substr(0, frames::kMaxOutChunk);
      FrameWriter(outbox_).begin(Type::out).u64(sent_).raw(chunk).end();
      sent_ += chunk.size();
      bytes.remove_prefix(chunk.size());
    }
    if (!link_down_) queue_output();
  }

  void on_output_ended() override {
    output_ended_ = true;
    // After the last OUT the ring holds, never ahead of it.
    if (keeper_) return pump_ring();
    FrameWriter(outbox_).begin(Type::output_ended).end();
    if (!link_down_) queue_flush();
  }

  void on_write_progress() override {
    if (keeper_ && link_down_) return;
    FrameWriter(outbox_).begin(Type::written).u64(channel_ ? channel_->bytes_written() : 0).end();
    if (!link_down_) queue_output();
  }

  void on_exited(SessionStatus status) override {
    exited_ = status;
    if (keeper_ && link_down_) {
      // The shell ended with no host to tell: the session is over; the rest of its tree
      // goes too, and the tombstone keeps the shell's own status.
      return end_lingering();
    }
    if (keeper_ && replaying_) return;  // said once the replay is through
    FrameWriter(outbox_)
        .begin(Type::exited)
        .u8(status.signal ? 1 : 0)
        .i32(status.signal ? *status.signal : status.exit_code.value_or(0))
        .end();
    if (!link_down_) queue_flush();
  }

  void on_quiescent() override {
    // Every process of the tree is gone, so nothing holds the terminal: what it still has
    // is the last output, then its end.
    channel_->pause_output(false);
    drain(1024);
    if (keeper_ && link_down_) {
      // Linger ran out (or the shell ended) with no host attached: the tombstone answers
      // a late attach.
      const std::string proof = "the session's helper reaped every process of its tree";
      if (expired_ || !exited_) {
        keeper_->bury(std::nullopt, SIGKILL, "killed after linger", proof);
      } else {
        keeper_->bury(exited_->signal ? std::nullopt : exited_->exit_code, exited_->signal,
                      "exited while no host held it", proof);
      }
      return finish(0);
    }
    if (link_down_) {
      // The host may have closed only its sending side (EOF on our stdin, its reading side
      // open): say it, without blocking on a link that may be stalled or gone.
      FrameWriter(outbox_).begin(Type::quiescent).end();
      flush_once();
      return finish(0);
    }
    finish_quiescent();
  }

  void on_lost(Error cause) override {
    if (keeper_ && link_down_) keeper_->bury(std::nullopt, std::nullopt, "lost", cause->message);
    FrameWriter(outbox_).begin(Type::error).u32(2).str(clip(cause->message)).end();
    if (!link_down_) flush_blocking();
    finish(1);
  }

  struct ev_loop* loop_;
  std::string state_dir_;  // --state-dir: where this machine's lingering sessions wait
  double hold_ms_;         // --hold-ms: a hold's bound (0: no holds)
  std::string hello_frame_;  // the host's HELLO, for a relay to pass on
  std::optional<RelayOrder> relay_;
  std::uint64_t in_received_ = 0;  // IN bytes ever taken from any host
  ev_io in_io_{};
  ev_io out_io_{};
  ev_prepare flush_before_poll_{};  // the outbox's write, before the loop polls (queue_flush)
  ev_timer link_timer_{};
  ev_timer kill_bound_{};
  ev_timer hold_timer_{};  // bounds a hold (supervisor/prompt_hold.hpp)
  supervisor::PromptHold hold_;  // from OPEN: the shell's marks end a send's hold
  frames::FrameReader reader_;
  std::string outbox_;
  std::unique_ptr<LocalChannel> channel_;
  // The link: stdin/stdout at first; a lingering session's later hosts come through its
  // rendezvous socket (link_owned_).
  int link_in_ = kStdin;
  int link_out_ = kStdout;
  // From OPEN: the shell's mark nonce and dialect, which a lingering session records for
  // its next host.
  std::string mark_nonce_;
  std::string shell_name_;
  proc::UniqueFd link_owned_;
  // Lingering (docs/outlive.md): set by LINGER.
  std::unique_ptr<LingerKeeper> keeper_;
  bool killing_ = false;    // a KILL, an expiry or the shell's end: the link's end detaches nothing
  bool expired_ = false;
  bool replaying_ = false;  // an attach's replay has not reached replay_to_ yet
  std::uint64_t replay_to_ = 0;
  std::optional<SessionStatus> exited_;
  bool output_ended_ = false;
  bool output_ended_sent_ = false;  // on this link
  unsigned rows_ = 0, cols_ = 0;  // the terminal's size (a later host's screen takes it)
  pid_t shell_pid_ = -1;
  bool hello_ = false;
  bool opened_ = false;
  bool link_down_ = false;
  bool link_failed_ = false;
  bool paused_ = false;
  std::uint32_t link_timeout_ms_ = 0;
  std::uint64_t sent_ = 0;
  std::uint64_t acked_ = 0;
  Facts last_;
  int exit_code_ = 0;
  int saved_flags_[2] = {-1, -1};
};

}  // namespace
}  // namespace dshpty::shell

int stdio_bridge_main(const char* state_dir, double hold_ms) {
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
    code = bridge.run();
    relay = std::move(bridge.relay_order());
  }
  ev_loop_destroy(loop);
  if (relay) return dshpty::shell::run_attach_relay(state_dir ? state_dir : "", relay->key, std::move(relay->first_bytes));
  return code;
}
