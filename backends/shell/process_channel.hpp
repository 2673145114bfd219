// The process channel: everything a shell session knows about where its processes live.
// The session (shell_session.hpp) keeps its phases and its sends' readiness on top of this
// interface and never touches an fd, a pid or /proc itself; a channel moves bytes both
// ways, reports the process events, answers questions about the terminal and kills the
// tree. Two implement it: the local channel (local_channel.hpp: a PTY master, a control
// socket to the supervisor helper, the helper's pidfd) and the stream channel
// (stream_channel.hpp: a far helper over a byte stream). The backend hands the session a
// ChannelFactory, so the session never names either.
//
// The terminal's facts come as one struct, the one the far helper's STATE frames carry
// (frames::TerminalFacts), filled with the facts a question names. Lingering (the tree
// outlives its host, docs/outlive.md) is a facet only a channel that can linger has.
//
// Events reach the session through ChannelEvents, from the loop: a watcher of the channel,
// or — for output and write progress — synchronously inside read_available() and write(),
// which exist so the session can take what is pending at a moment it chooses. A channel
// never calls back after release() or its destruction.
//
// Three process events are reported separately and never inferred from one another:
// exited (the shell's status), output ended (no process holds the terminal any more),
// quiescent (after kill_tree: the channel proved every process of the tree gone).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <functional>
#include <memory>

#include "link/frames.hpp"
#include "proc/job_stop.hpp"
#include "proc/stdin_probe.hpp"
#include "dshpty/errors.hpp"
#include "dshpty/result.hpp"
#include "dshpty/session.hpp"

namespace dshpty::shell {

class ChannelEvents {
 public:
  // The shell is running (its pid as the channel's processes see it).
  virtual void on_started(pid_t shell_pid) = 0;
  // The shell could not be started (the cause names the stage); the tree still has to be
  // killed like any other.
  virtual void on_start_failed(Error cause) = 0;
  // Bytes the terminal produced, in order.
  virtual void on_output(std::string_view bytes) = 0;
  // No process holds the terminal any more: every byte was delivered.
  virtual void on_output_ended() = 0;
  // More queued input reached the terminal (see bytes_written()).
  virtual void on_write_progress() = 0;
  // The shell itself was reaped (other processes of the tree may live on).
  virtual void on_exited(SessionStatus status) = 0;
  // After kill_tree(): every process of the tree is gone, and the channel can prove it.
  virtual void on_quiescent() = 0;
  // The channel ended without that proof (the helper died, the link broke): the tree's
  // end is unconfirmed. No event follows. ProcessChannel::word_loss says what it means.
  virtual void on_lost(Error cause) = 0;
  // A take-back a far side answered later (take_back_input gave nullopt and asked it): of
  // the last `own` bytes queued, `taken` left the terminal's input queue unread.
  virtual void on_taken_back(std::size_t /*own*/, std::size_t /*taken*/) {}
  // A port the session waits for opened: port_listener() now says who listens (a channel
  // whose tells_ports() is true).
  virtual void on_port_seen() {}
  // The session's cgroup reported a limit reached (ProcessChannel::limit_hit says which):
  // a far helper passes it on at once.
  virtual void on_limit_hit() {}

 protected:
  ~ChannelEvents() = default;
};

// The terminal's line discipline as its reader set it.
struct TerminalModes {
  bool echo = true;       // ECHO: typed input is shown
  bool canonical = true;  // ICANON: input is read a line at a time
};

// The terminal's facts: the struct a far helper sends, so a stream channel hands on what
// it holds and a local one fills the same fields (frames.hpp names each).
using TerminalFacts = frames::TerminalFacts;
// Which facts a question needs, bits of a FactSet: a local channel reads each from the
// kernel or /proc, so it reads only those asked for.
using FactSet = unsigned;
inline constexpr FactSet kFactForeground = 1;      // foreground (-1: none); filled too with
                                                   // the facts about its leader
inline constexpr FactSet kFactModes = 2;           // kStateModesKnown, kStateEcho, kStateCanonical
inline constexpr FactSet kFactInputUnread = 4;     // input_unread
inline constexpr FactSet kFactIgnoredSignals = 8;  // ignored_signals, of the foreground's leader
inline constexpr FactSet kFactShellCwd = 16;       // cwd, of the shell
inline constexpr FactSet kFactLeaderIsShell = 32;  // kStateLeaderIsShell, of the foreground's leader

// What a session says of a loss (ChannelEvents::on_lost), in the channel's words.
struct LossWords {
  Error close_error;   // what a close reports: the tree's end is unconfirmed
  Error start_error;   // what a start-up the loss cut short reports
  std::string status;  // the session's status says lost, in these words ("": it does not)
};

class LingerFacet;

class ProcessChannel {
 public:
  // Stops every watcher and closes every fd without waiting. Closing the control link is
  // the helper's order to kill the tree with no grace.
  virtual ~ProcessChannel() = default;

  // ---- output -------------------------------------------------------------------------
  // Delivers what the terminal holds now (bounded per call, so a flood cannot starve the
  // loop); true when it may hold more.
  virtual bool read_available() = 0;
  // How many read_available() calls drain the terminal before a caller measures it (a
  // probe, or a write that must follow what was printed before it). Each call takes up to
  // 512 KiB (8 reads of 64 KiB), far more than a PTY holds (11.8 KiB raw, 15 KiB cooked,
  // measured on Linux 6.18): a drain that needs more rounds is racing a flood, which must
  // not keep the loop.
  static constexpr int kProbeDrainReads = 8;
  virtual bool output_ended() const = 0;

  // ---- input --------------------------------------------------------------------------
  // Queues bytes for the terminal; they are written as it accepts them. Once the output
  // ended, what was not written never will be and counts as written.
  virtual void write(std::string_view bytes) = 0;
  // Bytes ever queued, and ever written (written <= queued).
  virtual std::uint64_t bytes_queued() const = 0;
  virtual std::uint64_t bytes_written() const = 0;
  // Takes back the last `own` bytes queued (a cancelled send's) while the terminal's reader
  // has not taken them: those not written yet are dropped, the terminal's input queue is
  // flushed, and what the flush removed from before them is queued again. The own bytes
  // removed (0: the reader had them all), or nullopt when this channel cannot tell now (a
  // far side that can is asked, and answers with on_taken_back).
  virtual std::optional<std::size_t> take_back_input(std::size_t /*own*/) { return std::nullopt; }
  // INVALID_ARGUMENT is the caller's job; BACKEND_FAILED when the terminal refused.
  virtual Status resize(unsigned rows, unsigned cols) = 0;

  // ---- the terminal's facts -----------------------------------------------------------
  // The facts in `wanted`, as of now (the others keep TerminalFacts' "unknown" values).
  // Input unread: written but not yet read by the terminal's reader (in canonical mode only
  // whole lines count). Linux's line discipline takes written bytes from the PTY's buffer
  // on a kernel worker, so right after a write the count may still be 0: "0" alone never
  // proves the input was read. Leader is shell: the foreground's leader is still a copy of
  // the shell (forked, given the terminal, not exec'd yet), which takes a SIGINT as the
  // shell would; set when that cannot be told yet.
  virtual TerminalFacts terminal_facts(FactSet wanted) const = 0;
  // The command line of process `pid` of the session (arguments joined by spaces, cut to a
  // few hundred bytes), or nullopt when it cannot be read.
  virtual std::optional<std::string> command_line(pid_t /*pid*/) const { return std::nullopt; }
  // Whether terminal_facts() may ask the far side a question (a stream channel's facts come
  // over its link): an observer, which must change nothing, does not ask then.
  virtual bool facts_are_questions() const { return false; }
  // Signals process group `pgid` of the session. BACKEND_FAILED naming the group.
  virtual Status signal_group(pid_t pgid, int signo) = 0;
  // What became of a signal_group(pgid, signo) just now (proc::signal_fate): missed when it
  // reached no running process (its leader had ended or was ending on its own, nothing else
  // of the group lives: the shell between two commands of a list still had that group in
  // front); unsettled when a later look must tell. reached when it cannot be told.
  virtual proc::SignalFate signal_fate(pid_t /*pgid*/, int /*signo*/) const { return proc::SignalFate::reached; }

  // Readers of terminal_facts, one fact each.
  // The terminal's foreground process group, or -1 when it has none.
  pid_t foreground_group() const { return terminal_facts(kFactForeground).foreground; }
  // nullopt when the terminal cannot be asked.
  std::optional<TerminalModes> terminal_modes() const {
    const TerminalFacts f = terminal_facts(kFactModes);
    if (!(f.flags & frames::kStateModesKnown)) return std::nullopt;
    return TerminalModes{(f.flags & frames::kStateEcho) != 0, (f.flags & frames::kStateCanonical) != 0};
  }
  // nullopt when the channel cannot tell.
  std::optional<std::size_t> input_unread() const {
    const TerminalFacts f = terminal_facts(kFactInputUnread);
    if (f.input_unread < 0) return std::nullopt;
    return static_cast<std::size_t>(f.input_unread);
  }
  // The shell's working directory (the kernel's: symlinks resolved), or nullopt.
  std::optional<std::string> shell_cwd() const {
    TerminalFacts f = terminal_facts(kFactShellCwd);
    if (f.cwd.empty()) return std::nullopt;
    return std::move(f.cwd);
  }
  // Whether the foreground group `pgid` ignores `signo` (SIG_IGN): a signal it ignores
  // changes nothing. False when that cannot be told (or `pgid` is not in front any more).
  bool ignores_signal(pid_t pgid, int signo) const {
    if (signo < 1 || signo > 64) return false;
    const TerminalFacts f = terminal_facts(kFactIgnoredSignals);
    return f.foreground == pgid && ((f.ignored_signals >> (signo - 1)) & 1) != 0;
  }
  // Whether the foreground's leader `leader` is still a copy of the shell; true when that
  // cannot be told (nor once another group is in front: the caller looks again).
  bool leader_is_shell_copy(pid_t leader) const {
    const TerminalFacts f = terminal_facts(kFactLeaderIsShell);
    return f.foreground != leader || (f.flags & frames::kStateLeaderIsShell) != 0;
  }

  // ---- readers of the terminal (the stdin probe) --------------------------------------
  // Whether this channel can prove a process blocked reading the terminal.
  virtual bool proves_readers() const = 0;
  // Remembers who reads the terminal now: they prove nothing until they have run again.
  // Call it just before a send's write.
  virtual void mark_readers() = 0;
  // mark_readers() when the shell sits at its own idle prompt: its group is the shell alone
  // (every job has a group of its own), so only its threads need remembering.
  virtual void mark_shell_reader(pid_t /*shell*/) { mark_readers(); }
  virtual void forget_readers() = 0;
  // Is the foreground group provably blocked reading the terminal right now?
  virtual bool foreground_reading() = 0;
  // The last foreground_reading() found no reader but the foreground waiting on the
  // terminal as a relay does (proc/stdin_probe.hpp: beside a socket or a PTY master it
  // relays, or with a short timeout); false when that cannot be told.
  virtual bool foreground_relays() const { return false; }
  // Of such a relay: it waits on another input beside the terminal (a socket, a PTY master:
  // ssh, script), not on the terminal alone with a short timeout (vim waiting out its
  // escape timeout). True when that cannot be told.
  virtual bool foreground_relays_input() const { return foreground_relays(); }

  // ---- the tree -----------------------------------------------------------------------
  // SIGHUP/SIGTERM to the tree, SIGKILL to all of it after `grace`, until none is left;
  // then on_quiescent (or on_lost). Idempotent; a second call may only shorten the grace.
  virtual void kill_tree(std::chrono::milliseconds grace) = 0;
  // on_quiescent was reported.
  virtual bool quiescent() const = 0;
  // After on_lost, a kill_tree may end what the loss left by other means (the session's
  // cgroups: their members killed until none is left): ending while under way, then
  // on_quiescent and ended once every one is proven gone, or on_lost again with the cause.
  enum class LostTree { not_ended, ending, ended };
  virtual LostTree lost_tree() const { return LostTree::not_ended; }
  // The helper did not prove the tree gone in time (it hangs, or a process of the session
  // took its control socket). A channel that can end the tree without it (a sandbox, whose
  // namespace dies with its init) kills it and says what it did; on_quiescent follows once
  // that end is proven. nullopt: it cannot, and nothing proves the tree gone.
  virtual std::optional<std::string> force_end() { return std::nullopt; }
  // Stops watching and closes every fd once the session is done with the channel; the
  // facts above stay readable.
  virtual void release() = 0;
  // The words of an on_lost cause for the session: its close, its start-up, its status.
  virtual LossWords word_loss(const Error& cause) const = 0;

  // Lingering (docs/outlive.md): null for a channel whose tree cannot outlive this host.
  virtual LingerFacet* linger() { return nullptr; }
  // The process of the session's tree listening on TCP `port` (any address), as a
  // SendMatch, or nullopt when none is seen: what `until: {port}` polls. Only processes a
  // command started at `since_ticks` (clock_ticks()) made count (proc::job_processes): not a
  // server an earlier command left listening; 0 counts every one (a far channel's helper
  // counts its whole tree). BACKEND_FAILED where this channel cannot look (a far helper
  // from before kCapJobs).
  virtual Result<std::optional<SendMatch>> port_listener(std::uint16_t /*port*/,
                                                         std::uint64_t /*since_ticks*/) const {
    return make_error(Code::BACKEND_FAILED, "until.port: this session's channel cannot see its ports");
  }
  // What the session's tree holds now, for `list`: its processes besides the shell (and
  // the helpers above it), and the TCP ports they listen on. nullopt where this channel
  // cannot look (a far helper from before kCapJobs; a stream channel says its last answer).
  // The channel calls on_port_seen when a port it was asked about opens, so the session's
  // port poll only renews the question (a far side watches next to its tree).
  virtual bool tells_ports() const { return false; }
  struct TreeLook {
    std::size_t processes = 0;
    std::vector<ListeningPort> listening;
  };
  virtual std::optional<TreeLook> look_at_tree() const { return std::nullopt; }
  // A moment in the clock a stop counts process start times in (proc::boot_ticks_now on
  // this machine); 0 where this channel cannot stop jobs.
  virtual std::uint64_t clock_ticks() const { return 0; }
  // The newest pid handed out in the channel's numbering (proc::newest_pid), 0 if unknown.
  virtual pid_t newest_pid() const { return 0; }
  // Stops the job in the terminal's foreground (proc/job_stop.hpp): its process group, the
  // orphans the session's subreaper adopted that started at or after `started_ticks`, and
  // their descendants; never the shell. With `ended_ticks` (not 0) the job has ended: no
  // group, what it left behind between its start and its end. `done` as JobStop's.
  // BACKEND_FAILED where this channel cannot (a far helper from before kCapJobs, a link
  // that is down, an ended job on a far side) or the shell is gone.
  virtual Result<std::unique_ptr<proc::StopHandle>> stop_job(proc::JobTimes /*times*/,
                                                          proc::JobStop::Done /*done*/) {
    return make_error(Code::BACKEND_FAILED, "stop: this session's channel cannot stop a job");
  }
  // The newest limit the session's cgroup reached (limits/session_cgroup.hpp), if any.
  virtual std::optional<LimitHit> limit_hit() const { return std::nullopt; }
};

// A channel whose tree outlives this host: detach() lets go of it without a kill (the
// helper waits for the next host), and the helper hears whether a send is live and what
// the results showed.
class LingerFacet {
 public:
  virtual void detach() = 0;
  virtual void note_send(bool live) = 0;
  // The session's results have shown every byte of output it has had so far (its shown-
  // output cursor moved to the end): the helper keeps the offset for the next host.
  virtual void note_shown() = 0;
  // For a channel that took over a lingering session: how many of the replayed bytes the
  // previous hosts' results had shown (the rest is what no result showed yet).
  virtual std::optional<std::uint64_t> shown_replay_bytes() const = 0;
  // For a channel that took over a lingering session: what the take-over replayed.
  virtual std::optional<AttachReport> attach_report() const = 0;
  // While a lingering remote session's link is being restored: why it broke. The session
  // runs on meanwhile (its status says reconnecting); input waits for the new link.
  virtual std::optional<std::string> reconnecting() const = 0;

 protected:
  ~LingerFacet() = default;
};

// What a channel factory opened: the channel, and the pid of the helper it started on this
// machine (-1: none here, a far helper).
struct OpenedChannel {
  std::unique_ptr<ProcessChannel> channel;
  pid_t local_helper_pid = -1;
};
// The backend's way to open a session's channel (StartParams::open_channel). No event is
// delivered before it returns; on failure nothing is left running.
using ChannelFactory = std::function<Result<OpenedChannel>(struct ev_loop*, ChannelEvents&)>;

}  // namespace dshpty::shell
