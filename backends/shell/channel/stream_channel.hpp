// The stream process channel: the session's processes on another machine, under a far
// `dshpty-supervisor --stdio` reached through a transport's stdin/stdout (channel/
// transport.hpp), speaking the frames of channel/frames.hpp. Three fds on the host's loop:
// the link socket, the transport's stderr and its pidfd; one timer for liveness (remote
// sessions only: a local one keeps zero idle wakeups).
//
// The terminal's facts (foreground group, modes, unread input, the shell's cwd, whether the
// foreground group blocks reading the terminal) live on the far side. The helper sends them
// bound to the output: a STATE before the output whose facts changed, taken right after
// that output was read, so when the session looks at output it sees the facts of that
// moment, as a local session does. The costly ones (the stdin probe) come only when asked
// (PROBE); an answer counts only if the probe was sent after the session's latest write,
// mark or signal, since frames keep their order both ways: such an answer was measured
// after those reached the far terminal and arrives after all output read before it. Until
// a fresh answer is in, the channel answers from the latest facts and asks for new ones:
// the session's polling (its probe and hold ticks) sees them one round trip later.
#pragma once

#include <ev.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "channel/frames.hpp"
#include "channel/process_channel.hpp"
#include "channel/transport.hpp"

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
};

class StreamChannel final : public ProcessChannel, private LingerFacet {
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
  Status signal_group(pid_t pgid, int signo) override;
  bool proves_readers() const override { return proves_readers_; }
  void mark_readers() override;
  void mark_shell_reader(pid_t shell) override;
  void forget_readers() override;
  bool foreground_reading() override;
  bool foreground_relays() const override { return relaying_; }
  void kill_tree(std::chrono::milliseconds grace) override;
  bool quiescent() const override { return quiescent_ && transport_gone_; }
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

  pid_t transport_pid() const noexcept { return transport_.pid; }

 private:
  StreamChannel(struct ev_loop* loop, ChannelEvents& events, StreamLaunch launch);
  Status start();
  // HELLO: the protocol version and this link's ping interval and silence bound. The first
  // frame of every link, the first one's and each reconnect's.
  void write_hello(std::string& out) const;

  static void on_link_readable(struct ev_loop*, ev_io* w, int);
  static void on_link_writable(struct ev_loop*, ev_io* w, int);
  static void on_before_poll(struct ev_loop*, ev_prepare* w, int);
  static void on_stderr_readable(struct ev_loop*, ev_io* w, int);
  static void on_pidfd_readable(struct ev_loop*, ev_io* w, int);
  static void on_liveness_tick(struct ev_loop*, ev_timer* w, int);
  static void on_retry(struct ev_loop*, ev_timer* w, int);

  void send(std::string frame_bytes);
  void send_mark(std::uint8_t mark);  // MARK 1 or 2 (mark_readers, mark_shell_reader)
  void flush();
  // Facts are stale (a write, mark or signal went out): answers to probes sent before it
  // no longer count, and the next question asks again.
  void invalidate_facts();
  // A write (by_input), a resize, a signal or a mark went out: the facts bound to output
  // are current again only after output read once the far side took it (WRITTEN).
  void terminal_changed(bool by_input);
  void note_bound_facts();  // an OUT or unasked STATE arrived
  enum class Need { bound_facts, probe_answer };
  // Asks for fresh facts unless a fresh answer is in or on its way, or (bound_facts) the
  // facts bound to output read after the latest write are in.
  void refresh(Need need) const;
  bool facts_fresh() const { return answered_seq_ > stale_before_; }
  void handle(const frames::Frame& frame);
  void apply_state(frames::PayloadReader& r);
  // The link is unusable (EOF, an error, a bad frame, silence): stop reading it, and let
  // the transport's exit (or the kill below) say the rest.
  void break_link(std::string why);
  void reap_transport();
  // The transport exited (info: how), or, with no transport, the link ended.
  void transport_gone(const siginfo_t* info);
  Status connect_rendezvous();
  void start_liveness();
  // "ssh exited 255: Connection refused".
  std::string transport_words(const siginfo_t* info) const;
  void end_output();

  // ---- reconnecting (docs/outlive.md, "Links that reconnect") --------------------------
  // The link may be taken back: a lingering remote session whose far side did not say it
  // is over.
  bool may_reconnect() const { return launch_.reconnect && launch_.linger && !key_.empty() && !final_; }
  // The link died (`words`: how): status reconnecting, and the next attempt is scheduled;
  // after the deadline, lost.
  void lose_link(const std::string& words);
  void schedule_attempt();
  void attempt();
  // ATTACHED on a reconnect: input, marks and control the cut may have eaten go again.
  void resume(std::uint64_t far_input_received);
  void report_lost(const std::string& words);
  // Start the link's watchers on transport_ and queue `first` frames.
  void watch_link(std::string first);
  // KEY.remote in this host's state directory follows the key and token (Linger::record_dir).
  void write_record();
  void remove_record();

  struct ev_loop* loop_;
  ChannelEvents& events_;
  StreamLaunch launch_;
  Transport transport_;
  StderrTail stderr_tail_;
  frames::FrameReader reader_;
  std::string outbox_;
  ev_io link_read_{};
  ev_io link_write_{};
  ev_prepare flush_before_poll_{};  // the outbox's write, before the loop polls (see send)
  ev_io stderr_io_{};
  ev_io pidfd_io_{};
  ev_timer liveness_{};
  ev_tstamp last_rx_ = 0;
  ev_tstamp last_tx_ = 0;
  ev_tstamp broken_at_ = 0;
  bool in_read_ = false;

  bool welcomed_ = false;
  bool link_broken_ = false;
  std::string link_error_;  // why the link broke, when the host saw it (a bad frame, silence)
  bool transport_gone_ = false;
  bool output_ended_ = false;
  bool quiescent_ = false;
  bool lost_reported_ = false;
  bool proves_readers_ = false;
  bool takes_back_ = false;  // the far side answers TAKE_BACK (WELCOME's kCapTakeBack)
  pid_t shell_pid_ = -1;
  std::uint64_t bytes_queued_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t consumed_ = 0;  // output offset delivered to the session
  std::uint64_t acked_ = 0;
  std::optional<AttachReport> attach_report_;
  std::uint64_t shown_ = 0;  // the output offset the last SHOWN said
  bool keeps_shown_ = false;  // the far side's WELCOME said kCapKeepsShown
  std::optional<std::uint64_t> shown_replay_;  // an attach: the replay's bytes already shown
  bool started_ = false;  // STARTED came (a reconnect's replay repeats it)

  // Reconnecting.
  std::string key_;    // LINGERING / ATTACHED: the session's key and the next attach's token
  std::string token_;
  bool final_ = false;  // the far side ended the session or refused us: no reconnect
  std::string final_words_;
  std::optional<std::string> reconnecting_;  // why, while the link is being restored
  bool resuming_ = false;  // an attempt's ATTACHED has not come yet
  ev_tstamp cut_at_ = 0;
  int attempts_ = 0;
  std::string last_attempt_words_;
  ev_timer retry_{};
  // Input offsets: the far side's count is ours plus in_base_ (a host that took the
  // session over started counting at 0). Input not yet written on the far side is kept
  // (from kept_from_), so a reconnect can send what the cut ate, exactly once.
  std::uint64_t in_base_ = 0;
  std::string input_kept_;
  std::uint64_t kept_from_ = 0;
  bool marked_ = false;         // a MARK 1 or 2 stands (mark_readers, mark_shell_reader)
  std::uint64_t mark_at_ = 0;   // the input offset when it was sent
  bool send_live_ = false;      // the last SENDING
  bool resize_pending_ = false;  // a resize while the link was down
  unsigned rows_ = 0, cols_ = 0;
  std::optional<std::uint32_t> kill_grace_;  // KILL asked
  ev_tstamp kill_asked_at_ = 0;              // while reconnecting
  bool record_written_ = false;

  // The far terminal's facts (see the top).
  frames::TerminalFacts facts_;
  bool reading_ = false;          // from the latest fresh answer, until output follows it
  bool relaying_ = false;         // the same answer found a relay (kStateRelaying)
  bool leader_is_shell_ = true;   // likewise
  std::uint32_t next_seq_ = 0;    // the last PROBE's seq
  std::uint32_t stale_before_ = 0;  // answers to probes up to this seq are stale
  std::uint32_t answered_seq_ = 0;
  // Facts bound to output (see terminal_changed).
  std::optional<std::uint64_t> await_written_;  // the WRITTEN count that covers the latest write
  bool bound_after_written_ = false;  // that WRITTEN came: later output was read after it
  bool bound_current_ = false;        // such output (or its STATE) came
  bool forget_pending_ = false;       // a MARK 0 owed before the next PROBE (forget_readers)
};

}  // namespace dshpty::shell
