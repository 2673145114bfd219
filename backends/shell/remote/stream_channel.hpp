// The stream process channel: the session's processes on another machine, under a far
// `dshpty-supervisor --stdio` reached through a transport's stdin/stdout (channel/
// transport.hpp), speaking the frames of link/frames.hpp through a link/frame_link.hpp.
// Three fds on the host's loop: the link socket, the transport's stderr and its pidfd; one
// timer for liveness (remote sessions only: a local one keeps zero idle wakeups).
//
// The terminal's facts (foreground group, modes, unread input, the shell's cwd, whether the
// foreground group blocks reading the terminal) live on the far side. The helper sends them
// bound to the output: a STATE before the output whose facts changed, taken right after
// that output was read, so when the session looks at output it sees the facts of that
// moment, as a local session does (remote/far_facts.hpp keeps them).
//
// Files: stream_channel.cpp the link's use and the session's calls, stream_frames.cpp the
// far side's frames, stream_reconnect.cpp the reconnect machine, remote_record.* the
// record a restarted host reads.
#pragma once

#include <ev.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "remote/far_facts.hpp"
#include "remote/far_jobs.hpp"
#include "remote/remote_record.hpp"
#include "process_channel.hpp"
#include "remote/transport.hpp"
#include "link/frame_link.hpp"
#include "loop/timer.hpp"

namespace dshpty::shell {

struct StreamLaunch {
  std::vector<std::string> transport;  // argv
  std::string label;                   // for messages: the transport's program name
  // OPEN
  std::vector<std::string> shell_argv;
  std::optional<std::string> cwd;
  std::string session_id;
  std::string term;
  std::vector<std::string> env;  // overrides: "NAME=value" sets, "NAME" unsets
  unsigned rows = 40;
  unsigned cols = 160;
  // 0 for both: no pings and no silence bound (a local link: zero idle wakeups).
  std::chrono::milliseconds ping_interval{10'000};
  std::chrono::milliseconds link_timeout{30'000};

  // The session outlives this host (LINGER after OPEN, docs/outlive.md).
  struct Linger {
    std::uint32_t seconds = 0;
    std::uint64_t ring_bytes = 0;
    std::string state_dir;
    std::string owner;
    std::string name;  // "" none
    std::string type;
    // A remote session's record in this host's state directory (KEY.remote): what a
    // restarted host needs to take it back (the key, the next token, the shell's marks).
    // "" : none (a local lingering session's record is its helper's).
    std::string record_dir;
    std::string mark_nonce;
    std::string shell;
  };
  std::optional<Linger> linger;
  // A local lingering session's recording (borrowed: the recorder's), passed to the helper
  // as its fd 3 (transport's words say so): it writes there while no host is attached.
  int record_fd = -1;
  // Take over a lingering session instead of starting one: no OPEN; connect to its
  // rendezvous socket (socket_path) and present its token (ATTACH), or, with a transport
  // (a remote session a previous host held), run the transport and present it there.
  struct Attach {
    std::string socket_path;
    std::string key;
    std::string token;
    std::string owner;
  };
  std::optional<Attach> attach;
  // A lingering session reached over `transport` whose link dies is not lost: the channel
  // runs the transport again and takes the session back (ATTACH with resume) until linger
  // and the link timeout have passed since the cut (docs/outlive.md, "Links that
  // reconnect"). Meaningful with `linger`.
  bool reconnect = false;
  // The session's limits, resolved by this host's policy (OPEN carries them): the far
  // helper makes the cgroups below its own, or the start fails naming why.
  Limits limits;
};

// The link's lifecycle. A first link starts `up` (its WELCOME, and an attach's ATTACHED,
// are awaited there); a lingering remote session's link that died goes `cut`, then
// `resuming` with each attempt's new link, and `up` again once ATTACHED says where to go on.
//
//   up/resuming ──(EOF, a bad frame, silence)──► broken
//        │                                          │
//        └──────(the transport exited)──► draining ◄┘
//                                            │
//                    (may reconnect) cut ◄───┴───► gone
//   cut ──(an attempt)──► resuming;   cut ──(past linger and the link timeout)──► gone
enum class LinkState {
  up,        // frames flow both ways
  resuming,  // a reconnect's link is up; its ATTACHED has not come (input waits)
  broken,    // the link is stopped; the transport's exit (or its kill) says the rest
  draining,  // the transport exited: what the link still holds is read, then the end said
  cut,       // no link and no transport: the next attempt is scheduled
  gone,      // the transport is gone (or there was none): the end was said
};

class StreamChannel final : public ProcessChannel, private LingerFacet, private link::FrameLink::Events {
 public:
  // Starts the transport and queues HELLO and OPEN. No event is delivered before this
  // returns; on failure nothing is left running.
  static Result<std::unique_ptr<StreamChannel>> launch(struct ev_loop* loop, ChannelEvents& events,
                                                       StreamLaunch launch);
  ~StreamChannel() override;
  StreamChannel(const StreamChannel&) = delete;
  StreamChannel& operator=(const StreamChannel&) = delete;

  bool read_available() override;
  bool output_ended() const override { return output_ended_; }
  void write(std::string_view bytes) override;
  std::uint64_t bytes_queued() const override { return bytes_queued_; }
  std::uint64_t bytes_written() const override { return bytes_written_; }
  std::optional<std::size_t> take_back_input(std::size_t own) override;
  Status resize(unsigned rows, unsigned cols) override;
  TerminalFacts terminal_facts(FactSet wanted) const override;
  bool facts_are_questions() const override { return true; }
  Status signal_group(pid_t pgid, int signo) override;
  bool proves_readers() const override { return has(frames::kCapProvesReaders); }
  void mark_readers() override;
  void mark_shell_reader(pid_t shell) override;
  void forget_readers() override;
  bool foreground_reading() override { return facts_.foreground_reading(); }
  bool foreground_relays() const override { return facts_.relaying(); }
  bool foreground_relays_input() const override { return facts_.relaying_input(); }
  void kill_tree(std::chrono::milliseconds grace) override;
  bool quiescent() const override { return quiescent_ && transport_ended(); }
  void release() override;
  LossWords word_loss(const Error& cause) const override;
  LingerFacet* linger() override { return lingers() ? this : nullptr; }
  bool lingers() const { return launch_.linger || launch_.attach; }
  void detach() override;
  void note_send(bool live) override;
  void note_shown() override;
  std::optional<std::uint64_t> shown_replay_bytes() const override { return shown_replay_; }
  std::optional<AttachReport> attach_report() const override { return attach_report_; }
  std::optional<std::string> reconnecting() const override { return reconnecting_; }
  // Background jobs (stream_jobs.cpp, remote/far_jobs.hpp): asked of the far side.
  Result<std::optional<SendMatch>> port_listener(std::uint16_t port, std::uint64_t since_ticks) const override;
  bool tells_ports() const override { return has(frames::kCapJobs); }
  std::optional<TreeLook> look_at_tree() const override;
  std::uint64_t clock_ticks() const override;
  Result<std::unique_ptr<proc::StopHandle>> stop_job(proc::JobTimes times, proc::JobStop::Done done) override;

  pid_t transport_pid() const noexcept { return transport_.pid; }
  LinkState link_state() const noexcept { return state_; }
  std::optional<LimitHit> limit_hit() const override { return limit_hit_; }

 private:
  StreamChannel(struct ev_loop* loop, ChannelEvents& events, StreamLaunch launch);
  Status start();
  // HELLO: the protocol version and this link's ping interval and silence bound. The first
  // frame of every link, the first one's and each reconnect's.
  frames::Hello hello() const;
  bool has(std::uint32_t capability) const { return (capabilities_ & capability) != 0; }
  // Frames go both ways: the link is up, resuming or drained, and not stopped.
  bool link_usable() const {
    return (state_ == LinkState::up || state_ == LinkState::resuming || state_ == LinkState::draining) &&
           link_.reading();
  }
  // ... and the session's input and control may go: not while a reconnect's ATTACHED is due
  // (also when its link drains: the transport exited right behind it).
  bool link_up() const { return link_usable() && !reconnecting_; }
  bool transport_ended() const {
    return state_ == LinkState::draining || state_ == LinkState::cut || state_ == LinkState::gone;
  }
  // Frames the far side reads in order; dropped on a link that is not usable.
  template <class F>
  void write_frame(const F& frame) {
    if (link_usable()) link_.post(frame);
  }
  void write_mark(std::uint8_t mark);  // MARK 1 or 2 (mark_readers, mark_shell_reader)
  void terminal_changed(bool by_input) { facts_.terminal_changed(by_input, bytes_queued_); }

  // link::FrameLink::Events
  void on_frame(const frames::Frame& frame) override;
  void on_link_end(link::LinkEnd end, const std::string& why) override;
  void on_read_done() override;

  // ---- the far side's frames (stream_frames.cpp) --------------------------------------
  // A frame that breaks the protocol: the link ends for good (no reconnect to such a peer).
  void bad(const std::string& what);
  void on_welcome(const frames::Welcome& f);
  void on_written(const frames::Written& f);
  void on_attached(const frames::Attached& f);
  void on_error(const frames::ErrorFrame& f);
  void write_record();
  // WATCH_PORT, LOOK, STOP and their answers (stream_jobs.cpp); true when `f` was one.
  bool on_job_frame(const frames::Frame& f);
  std::optional<SendMatch> watch_port(std::uint16_t port);
  void ask_look();

  // ---- the link's and the transport's end ----------------------------------------------
  // The link is unusable (EOF, an error, a bad frame, silence): stop reading it, and let
  // the transport's exit (or the kill below) say the rest.
  void break_link(std::string why);
  static void on_stderr_readable(struct ev_loop*, ev_io* w, int);
  static void on_pidfd_readable(struct ev_loop*, ev_io* w, int);
  void on_liveness_tick();
  void reap_transport();
  // The transport exited (info: how), or, with no transport, the link ended.
  void transport_gone(const siginfo_t* info);
  Status connect_rendezvous();
  void start_liveness();
  // "ssh exited 255: Connection refused".
  std::string transport_words(const siginfo_t* info) const;
  void end_output();
  // Stops the transport's watchers and closes its fds (the link's too).
  void drop_transport();

  // ---- reconnecting (stream_reconnect.cpp; docs/outlive.md, "Links that reconnect") ----
  // The link may be taken back: a lingering remote session whose far side did not say it
  // is over.
  bool may_reconnect() const { return launch_.reconnect && launch_.linger && !key_.empty() && !final_words_; }
  // The link died (`words`: how): state cut, and the next attempt is scheduled; after the
  // deadline, lost.
  void lose_link(const std::string& words);
  void schedule_attempt();
  void attempt();
  // ATTACHED on a reconnect: input, marks and control the cut may have eaten go again.
  void resume(std::uint64_t far_input_received);
  void report_lost(const std::string& words);
  // Starts the link and the transport's watchers on transport_ and queues `first` frames.
  void watch_link(std::string first);

  struct ev_loop* loop_;
  ChannelEvents& events_;
  StreamLaunch launch_;
  Transport transport_;  // its link fd is handed to link_
  StderrTail stderr_tail_;
  link::FrameLink link_;
  LinkState state_ = LinkState::up;
  ev_io stderr_io_{};
  ev_io pidfd_io_{};
  Timer liveness_;
  ev_tstamp broken_at_ = 0;  // the link's why_broken(): the host's reason (a bad frame, silence)

  std::uint32_t capabilities_ = 0;  // the far side's WELCOME (kCap*)
  bool welcomed_ = false;           // this link's WELCOME came
  bool started_ = false;            // STARTED came (a reconnect's replay repeats it)
  bool output_ended_ = false;
  bool quiescent_ = false;          // QUIESCENT came: the far tree is gone
  pid_t shell_pid_ = -1;
  std::uint64_t bytes_queued_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t consumed_ = 0;  // output offset delivered to the session
  std::uint64_t acked_ = 0;
  std::optional<AttachReport> attach_report_;
  std::uint64_t shown_ = 0;  // the output offset the last SHOWN said
  std::optional<std::uint64_t> shown_replay_;  // an attach: the replay's bytes already shown

  // Reconnecting.
  std::string key_;    // LINGERING / ATTACHED: the session's key and the next attach's token
  std::string token_;
  // The far side ended the session or refused us (its words): no reconnect.
  std::optional<std::string> final_words_;
  std::optional<std::string> reconnecting_;  // why, while the link is being restored
  ev_tstamp cut_at_ = 0;
  int attempts_ = 0;
  std::string last_attempt_words_;
  Timer retry_;
  RemoteRecord record_;
  // Input offsets: the far side's count is ours plus in_base_ (a host that took the
  // session over started counting at 0). Input not yet written on the far side is kept
  // (from kept_from_), so a reconnect can send what the cut ate, exactly once.
  std::uint64_t in_base_ = 0;
  std::string input_kept_;
  std::uint64_t kept_from_ = 0;
  std::optional<std::uint64_t> mark_at_;  // a MARK 1 or 2 stands: the input offset it was sent at
  bool send_live_ = false;       // the last SENDING
  bool resize_pending_ = false;  // a resize while the link was down
  unsigned rows_ = 0, cols_ = 0;
  std::optional<std::uint32_t> kill_grace_;  // KILL asked
  ev_tstamp kill_asked_at_ = 0;              // while reconnecting

  // The far terminal's facts (remote/far_facts.hpp).
  FarFacts facts_;
  // The far side's answers about background jobs (remote/far_jobs.hpp).
  FarJobs jobs_;
  std::optional<LimitHit> limit_hit_;  // the newest LIMIT_HIT
};

}  // namespace dshpty::shell
