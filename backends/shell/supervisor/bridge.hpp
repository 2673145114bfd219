// The far side of a remote session, `dshpty-supervisor --stdio` (link/frames.hpp is the
// protocol; docs/remote.md the design). It runs the very channel a local session runs
// (LocalChannel: the PTY, the stdin probe, this program again in its local face as the
// session's subreaper) on a libev loop of its own, and only translates: the host's frames
// into channel calls, the channel's events and facts into frames. So a remote session's
// readiness, kill and proof are the local code's, one byte pipe away.
//
// The link is stdin/stdout (a link/frame_link.hpp). Its end (EOF, an error, a bad frame,
// no frame for the host's link timeout) is the order to kill the tree with no grace; the
// program exits once the tree is proven gone (or after a bound: the local face's own EOF
// rule then finishes it). Unless the host sent LINGER (docs/outlive.md): then the end of a
// link detaches, output goes on into the keeper's ring, and a later host arrives through
// the keeper's rendezvous socket (linger/linger_keeper.hpp) as the new link.
//
// Files: stdio_bridge.cpp the link and the host's frames, bridge_open.cpp OPEN and the
// relay of an ATTACH, bridge_flow.cpp flow control and the prompt hold, bridge_facts.cpp
// the terminal's facts (STATE, PROBE), bridge_linger.cpp linger: adopt and replay, and
// bridge_events.cpp the channel's events.
#pragma once

#include <ev.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "local/local_channel.hpp"
#include "link/frame_link.hpp"
#include "loop/timer.hpp"
#include "linger/linger_keeper.hpp"
#include "record/detached_writer.hpp"
#include "supervisor/prompt_hold.hpp"

namespace dshpty::shell {

// How long the last frames (QUIESCENT, an ERROR, a relay's WELCOME) may wait for a slow
// link before the program exits.
inline constexpr std::chrono::milliseconds kLastWords{10'000};

// The outbox may hold this much before the terminal stops being read (besides the window).
inline constexpr std::size_t kOutboxBound = 2 * frames::kMaxFrame;

// A host that opened with ATTACH: the relay to the lingering helper runs once the loop is
// left (supervisor/attach_relay.hpp).
struct RelayOrder {
  std::string key;
  std::string first_bytes;
};

// Where the host's link is. greeting → opening → up; up ⇄ down only for a lingering
// session (a link's end detaches it; a later host's adopt brings a new link up).
enum class HostLink {
  greeting,  // no HELLO yet
  opening,   // HELLO came: OPEN (or an ATTACH to relay) must follow
  up,        // the session runs for this host
  down,      // the link ended (or was left for a relay): no frame is read any more
};

// How the session ends, once it does: a KILL, or linger's expiry (or the shell's end)
// with no host. Either way the link's end detaches nothing any more.
enum class Ending { none, killing, expired };

class Bridge final : private ChannelEvents, private link::FrameLink::Events {
 public:
  Bridge(struct ev_loop* loop, std::string state_dir, double hold_ms);
  // The link's file descriptions may be shared with whoever started us (a terminal, a
  // pipe of a container runtime): their O_NONBLOCK is put back as it was.
  ~Bridge();
  Bridge(const Bridge&) = delete;
  Bridge& operator=(const Bridge&) = delete;

  // Runs until the session's tree is gone; the exit status.
  int run();
  std::optional<RelayOrder>& relay_order() { return relay_; }
  // A lingering session's recording, written while no host is attached.
  void record_while_detached(std::unique_ptr<record::DetachedWriter> writer) { detached_record_ = std::move(writer); }

 private:
  // ---- the link and the host's frames (stdio_bridge.cpp) -------------------------------
  void on_frame(const frames::Frame& f) override;
  void on_link_end(link::LinkEnd end, const std::string& why) override;
  void on_received() override;
  void on_flushed() override;
  bool link_down() const { return link_state_ == HostLink::down; }
  void on_hello(std::string_view payload);
  // ERROR(protocol_error), then the link's end.
  void protocol_error(const std::string& why);
  // The link is gone: kill the tree with no grace and exit once it is proven gone.
  void link_ended(const std::string& why);
  void on_link_timeout();
  void on_kill_bound();
  // Starts killing the whole tree with no grace, bounded by kill_bound_.
  void kill_now();
  void finish(int code);
  void finish_quiescent();
  void close_link();

  // ---- OPEN and the relay (bridge_open.cpp) ------------------------------------------
  void open(std::string_view payload);
  void relay(const frames::Frame& f);

  // ---- flow control and the prompt hold (bridge_flow.cpp) ------------------------------
  // Frames out before the loop polls (ends a hold).
  void queue_flush();
  // Output and WRITTEN: held while a send waits for its prompt, else out like any frame.
  void queue_output();
  void begin_hold();
  void end_hold();
  void update_flow();

  // ---- the terminal's facts (bridge_facts.cpp) -----------------------------------------
  void drain(int reads);
  frames::TerminalFacts cheap_facts() const;
  void queue_state(std::uint32_t seq, const frames::TerminalFacts& f);
  void answer_probe(std::uint32_t seq);

  // ---- lingering (bridge_linger.cpp; docs/outlive.md) -----------------------------------
  void start_linger(std::string_view payload);
  void detach(const std::string& why);
  void adopt(proc::UniqueFd link, frames::FrameReader reader, AttachRequest request);
  void pump_ring();
  // `why`: expired when linger ran out; else the shell ended with no host.
  void end_lingering(Ending why = Ending::killing);
  frames::Welcome welcome() const;

  // ---- the channel's events (bridge_events.cpp) ------------------------------------------
  void on_started(pid_t shell_pid) override;
  void on_start_failed(Error cause) override;
  void on_output(std::string_view bytes) override;
  void on_output_ended() override;
  void on_write_progress() override;
  void on_exited(SessionStatus status) override;
  void on_quiescent() override;
  void on_lost(Error cause) override;
  frames::Exited exited_frame() const;

  // ---- background jobs (bridge_jobs.cpp): WATCH_PORT, LOOK, STOP ------------------------
  // True when `f` is one of them (answered, or refused as a protocol error).
  bool job_frame(const frames::Frame& f);
  void on_port_watch_tick();
  void answer_stop(std::uint32_t seq, const proc::StopReport& report);
  void note_input(std::uint64_t at);
  proc::JobTimes stop_times(const frames::Stop& stop) const;
  // ---- limits (bridge_limits.cpp) ---------------------------------------------------------
  // OPEN's limits: the session's cgroups below this helper's own, in `launch`
  // (`placement` keeps the directories' fds until the spawn). False, with START_FAILED
  // naming the cause, when they cannot be had: the shell never runs unlimited.
  bool place_limits(const frames::Open& open, LocalLaunch& launch, limits::Placement& placement);
  // LIMIT_HIT (queued) when the channel's newest limit reached is not the one this link heard.
  void report_limit();
  void on_limit_hit() override;

  struct ev_loop* loop_;
  std::string state_dir_;  // --state-dir: where this machine's lingering sessions wait
  double hold_ms_;         // --hold-ms: a hold's bound (0: no holds)
  std::string hello_frame_;  // the host's HELLO, for a relay to pass on
  std::optional<RelayOrder> relay_;
  std::uint64_t in_received_ = 0;  // IN bytes ever taken from any host
  link::FrameLink link_;
  HostLink link_state_ = HostLink::greeting;
  Timer link_timer_;
  Timer kill_bound_;
  Timer hold_timer_;  // bounds a hold (supervisor/prompt_hold.hpp)
  supervisor::PromptHold hold_;  // from OPEN: the shell's marks end a send's hold
  std::unique_ptr<LocalChannel> channel_;
  // From OPEN: the shell's mark nonce and dialect, which a lingering session records for
  // its next host.
  std::string mark_nonce_;
  std::string shell_name_;
  // Lingering (docs/outlive.md): set by LINGER.
  std::unique_ptr<LingerKeeper> keeper_;
  std::unique_ptr<record::DetachedWriter> detached_record_;  // the host's recording, while none is attached
  Ending ending_ = Ending::none;
  bool replaying_ = false;  // an attach's replay has not reached replay_to_ yet
  std::uint64_t replay_to_ = 0;
  std::optional<SessionStatus> exited_;
  bool output_ended_ = false;
  bool output_ended_sent_ = false;  // on this link
  unsigned rows_ = 0, cols_ = 0;  // the terminal's size (a later host's screen takes it)
  pid_t shell_pid_ = -1;
  bool link_failed_ = false;  // a broken protocol or a silent host: the exit status says so
  bool paused_ = false;       // the terminal is not read (flow control)
  std::uint32_t link_timeout_ms_ = 0;
  std::uint64_t sent_ = 0;
  std::uint64_t acked_ = 0;
  frames::TerminalFacts last_;
  bool limited_ = false;  // OPEN carried limits: LIMIT_HIT may be sent
  std::optional<LimitHit> limit_sent_;  // the newest LIMIT_HIT this link heard
  int exit_code_ = 0;
  int saved_flags_[2] = {-1, -1};
  // WATCH_PORT: the port the host waits for, until when (ev_now), polled on its timer.
  struct PortWatch {
    std::uint32_t seq = 0;
    std::uint16_t port = 0;  // 0: none
    ev_tstamp since = 0, until = 0;
  };
  PortWatch port_watch_;
  Timer port_watch_timer_;
  std::map<std::uint32_t, std::unique_ptr<proc::StopHandle>> stops_;  // STOPs under way
  // Each IN's place in the input and the moment it was written: a STOP's input_at finds
  // its job's start here (the newest kInputMarks).
  struct InputMark {
    std::uint64_t at = 0;  // the offset of its first byte (in_received_ before it)
    std::uint64_t ticks = 0;
    pid_t last_pid = 0;
  };
  static constexpr std::size_t kInputMarks = 256;
  std::deque<InputMark> input_marks_;
};

// A message for a frame: an error's words may carry a path or an argv from OPEN, and a
// frame must stay within kMaxFrame.
std::string clip(std::string text);

}  // namespace dshpty::shell
