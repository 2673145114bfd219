// The process channel: everything a shell session knows about where its processes live.
// The session (shell_session.hpp) keeps its phases and its sends' readiness on top of this
// interface and never touches an fd, a pid or /proc itself; a channel moves bytes both
// ways, reports the process events, answers questions about the terminal and kills the
// tree. The local channel (local_channel.hpp: a PTY master, a control socket to the
// supervisor helper, the helper's pidfd) is the first implementation; a channel that
// speaks to a far helper over a byte stream is the next one.
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
  // end is unconfirmed. No event follows.
  virtual void on_lost(Error cause) = 0;
  // A take-back a far side answered later (take_back_input gave nullopt and asked it): of
  // the last `own` bytes queued, `taken` left the terminal's input queue unread.
  virtual void on_taken_back(std::size_t /*own*/, std::size_t /*taken*/) {}

 protected:
  ~ChannelEvents() = default;
};

// The terminal's line discipline as its reader set it.
struct TerminalModes {
  bool echo = true;       // ECHO: typed input is shown
  bool canonical = true;  // ICANON: input is read a line at a time
};

class ProcessChannel {
 public:
  // Stops every watcher and closes every fd without waiting. Closing the control link is
  // the helper's order to kill the tree with no grace.
  virtual ~ProcessChannel() = default;

  // ---- output -------------------------------------------------------------------------
  // Delivers what the terminal holds now (bounded per call, so a flood cannot starve the
  // loop); true when it may hold more.
  virtual bool read_available() = 0;
  virtual bool output_ended() const = 0;

  // ---- input --------------------------------------------------------------------------
  // Queues bytes for the terminal; they are written as it accepts them. Once the output
  // ended, what was not written never will be and counts as written.
  virtual void write(std::string_view bytes) = 0;
  // Bytes ever queued, and ever written (written <= queued).
  virtual std::uint64_t bytes_queued() const = 0;
  virtual std::uint64_t bytes_written() const = 0;
  // Bytes written but not yet read by the terminal's reader (in canonical mode only whole
  // lines count); nullopt when the channel cannot tell. Linux's line discipline takes
  // written bytes from the PTY's buffer on a kernel worker, so right after a write the
  // count may still be 0: "0" alone never proves the input was read.
  virtual std::optional<std::size_t> input_unread() const = 0;
  // Takes back the last `own` bytes queued (a cancelled send's) while the terminal's reader
  // has not taken them: those not written yet are dropped, the terminal's input queue is
  // flushed, and what the flush removed from before them is queued again. The own bytes
  // removed (0: the reader had them all), or nullopt when this channel cannot tell now (a
  // far side that can is asked, and answers with on_taken_back).
  virtual std::optional<std::size_t> take_back_input(std::size_t /*own*/) { return std::nullopt; }
  // INVALID_ARGUMENT is the caller's job; BACKEND_FAILED when the terminal refused.
  virtual Status resize(unsigned rows, unsigned cols) = 0;

  // ---- the terminal's facts -----------------------------------------------------------
  // The terminal's foreground process group, or -1 when it has none.
  virtual pid_t foreground_group() const = 0;
  // nullopt when the terminal cannot be asked.
  virtual std::optional<TerminalModes> terminal_modes() const = 0;
  // The working directory of process `pid` of the session (the kernel's: symlinks
  // resolved), or nullopt when it cannot be read.
  virtual std::optional<std::string> working_directory(pid_t pid) const = 0;
  // The command line of process `pid` of the session (arguments joined by spaces, cut to a
  // few hundred bytes), or nullopt when it cannot be read.
  virtual std::optional<std::string> command_line(pid_t /*pid*/) const { return std::nullopt; }
  // Signals process group `pgid` of the session. BACKEND_FAILED naming the group.
  virtual Status signal_group(pid_t pgid, int signo) = 0;
  // Whether process `pid` ignores `signo` (SIG_IGN): a signal it ignores changes nothing.
  // False when that cannot be told.
  virtual bool ignores_signal(pid_t pid, int signo) const = 0;
  // Whether the group leader `leader` is still a copy of the shell `shell`: forked, given
  // the terminal, not exec'd yet (same command line). Until it execs it takes a SIGINT as
  // the shell would. True when that cannot be told yet.
  virtual bool leader_is_shell_copy(pid_t leader, pid_t shell) const = 0;

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

  // ---- the tree -----------------------------------------------------------------------
  // SIGHUP/SIGTERM to the tree, SIGKILL to all of it after `grace`, until none is left;
  // then on_quiescent (or on_lost). Idempotent; a second call may only shorten the grace.
  virtual void kill_tree(std::chrono::milliseconds grace) = 0;
  // on_quiescent was reported.
  virtual bool quiescent() const = 0;
  // The helper did not prove the tree gone in time (it hangs, or a process of the session
  // took its control socket). A channel that can end the tree without it (a sandbox, whose
  // namespace dies with its init) kills it and says what it did; on_quiescent follows once
  // that end is proven. nullopt: it cannot, and nothing proves the tree gone.
  virtual std::optional<std::string> force_end() { return std::nullopt; }
  // Stops watching and closes every fd once the session is done with the channel; the
  // facts above stay readable.
  virtual void release() = 0;

  // ---- lingering (docs/outlive.md) ----------------------------------------------------
  // Whether the tree outlives this host: then detach() lets go of it without a kill (the
  // helper waits for the next host), and the helper hears whether a send is live.
  virtual bool lingers() const { return false; }
  virtual void detach() { release(); }
  virtual void note_send(bool /*live*/) {}
  // The session's results have shown every byte of output it has had so far (its shown-
  // output cursor moved to the end): a lingering helper keeps the offset for the next host.
  virtual void note_shown() {}
  // For a channel that took over a lingering session: how many of the replayed bytes the
  // previous hosts' results had shown (the rest is what no result showed yet).
  virtual std::optional<std::uint64_t> shown_replay_bytes() const { return std::nullopt; }
  // The newest limit the session's cgroup reached (limits/session_cgroup.hpp), if any.
  virtual std::optional<LimitHit> limit_hit() const { return std::nullopt; }
  // For a channel that took over a lingering session: what the take-over replayed.
  virtual std::optional<AttachReport> attach_report() const { return std::nullopt; }
  // While a lingering remote session's link is being restored: why it broke. The session
  // runs on meanwhile (its status says reconnecting); input waits for the new link.
  virtual std::optional<std::string> reconnecting() const { return std::nullopt; }
};

}  // namespace dshpty::shell
