// The far side's answers about background jobs (link/frames.hpp: WATCH_PORT, LOOK, STOP;
// docs/remote.md, "Jobs"): what a local session's helper would tell it, from the very
// LocalChannel calls a local session makes, so the tree, its listeners and the stop with
// its proof are the local code's.
//
// A port watch polls here, next to the tree, on the local schedule (proc/port_poll.hpp),
// and answers once: the host hears one frame when the port opens, not a poll per tick over
// the link. It lasts kWatchPortForMs unless the host renews it (it does while its send
// waits), so a host that went away or stopped waiting leaves no poll behind.
#include <cmath>
#include <unistd.h>

#include "proc/port_poll.hpp"
#include "supervisor/bridge.hpp"

namespace dshpty::shell {

using frames::decode;
using frames::Type;

bool Bridge::job_frame(const frames::Frame& f) {
  const std::string_view p = f.payload;
  switch (f.type) {
    case Type::watch_port: {
      auto w = decode<frames::WatchPort>(p);
      if (!w) return protocol_error("bad WATCH_PORT"), true;
      const ev_tstamp now = ev_now(loop_);
      if (w->port == 0) {
        port_watch_ = {};
        port_watch_timer_.stop();
        return true;
      }
      const bool renewal = port_watch_.port == w->port && port_watch_.seq == w->seq;
      port_watch_ = {.seq = w->seq, .port = w->port, .since = renewal ? port_watch_.since : now,
                     .until = now + frames::kWatchPortForMs / 1000.};
      if (!renewal) on_port_watch_tick();  // one look at once: the port may be open already
      return true;
    }
    case Type::look: {
      auto l = decode<frames::Look>(p);
      if (!l) return protocol_error("bad LOOK"), true;
      frames::Tree tree{.seq = l->seq, .known = false, .processes = 0, .listening = {}};
      if (auto look = channel_ ? channel_->look_at_tree() : std::nullopt) {
        tree.known = true;
        tree.processes = static_cast<std::uint32_t>(look->processes);
        for (const ListeningPort& port : look->listening)
          tree.listening.push_back({.port = static_cast<std::uint16_t>(port.port), .address = port.address,
                                    .pid = static_cast<std::int32_t>(port.pid), .command = port.command});
      }
      link_.queue(tree);
      queue_flush();
      return true;
    }
    case Type::stop: {
      auto s = decode<frames::Stop>(p);
      if (!s) return protocol_error("bad STOP"), true;
      if (!channel_) {
        link_.queue(frames::Stopped{.seq = s->seq, .refused = "stop: the session's shell never started",
                                    .stopped = false, .signals = {}, .remaining = {}});
        queue_flush();
        return true;
      }
      const std::uint32_t seq = s->seq;
      auto stop = channel_->stop_job(stop_times(*s), [this, seq](proc::StopReport report) { answer_stop(seq, report); });
      if (!stop) {
        link_.queue(frames::Stopped{.seq = seq, .refused = clip(stop.error()->message), .stopped = false,
                                    .signals = {}, .remaining = {}});
        queue_flush();
        return true;
      }
      stops_[seq] = std::move(*stop);
      return true;
    }
    default:
      return false;
  }
}

void Bridge::note_input(std::uint64_t at) {
  if (input_marks_.size() == kInputMarks) input_marks_.pop_front();
  input_marks_.push_back({.at = at, .ticks = proc::boot_ticks_now(), .last_pid = proc::newest_pid()});
}

// The job's start in this machine's clock. Exact when the host said where its line starts in
// the input and that write is still noted: the moment the IN holding its first byte was
// written, with the newest pid then (so its line's own `&` is found while it runs). Else the
// host says how long ago it wrote the line: its IN took the link's one-way time to get here
// and this STOP may have been quicker, so the start is taken a second earlier, with no pid:
// an orphan an earlier command left in that second looks like the job's (the hole
// proc/job_stop.hpp names, widened), and the shell's children are not looked at while the
// job runs.
proc::JobTimes Bridge::stop_times(const frames::Stop& stop) const {
  if (stop.input_at && !input_marks_.empty() && input_marks_.front().at <= *stop.input_at &&
      *stop.input_at < in_received_) {
    const InputMark* found = &input_marks_.front();
    for (const InputMark& m : input_marks_)
      if (m.at <= *stop.input_at) found = &m;
    return {.started_ticks = found->ticks, .ended_ticks = 0, .last_pid = found->last_pid, .ended_last_pid = 0,
            .input_at = std::nullopt};
  }
  const auto hz = static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
  const std::uint64_t now = proc::boot_ticks_now();
  const std::uint64_t back = (static_cast<std::uint64_t>(stop.since_ms) * hz + 999) / 1000 + hz;
  return {.started_ticks = now > back ? now - back : 0, .ended_ticks = 0, .last_pid = 0, .ended_last_pid = 0,
          .input_at = std::nullopt};
}

void Bridge::answer_stop(std::uint32_t seq, const proc::StopReport& report) {
  frames::Stopped out{.seq = seq, .refused = {}, .stopped = report.stopped, .signals = report.signals, .remaining = {}};
  for (const auto& r : report.remaining)
    out.remaining.push_back({.pid = static_cast<std::int32_t>(r.pid), .command = r.command, .why = r.why});
  // A link that is down (a lingering session between hosts) drops it: the host that asked
  // said its stop unconfirmed when the link went.
  if (!link_down()) {
    link_.queue(out);
    queue_flush();
  }
  stops_.erase(seq);  // the JobStop whose callback this is: it allows its destruction here
}

void Bridge::on_port_watch_tick() {
  const PortWatch w = port_watch_;
  const ev_tstamp now = ev_now(loop_);
  if (w.port == 0 || now > w.until || !channel_) {
    port_watch_ = {};
    return port_watch_timer_.stop();
  }
  auto seen = channel_->port_listener(w.port, 0);  // its whole tree: WATCH_PORT carries no start
  if (seen && *seen) {
    const SendMatch& m = **seen;
    port_watch_ = {};
    port_watch_timer_.stop();
    if (link_down()) return;
    link_.queue(frames::PortSeen{.seq = w.seq, .port = w.port, .pid = m.pid,
                                 .address = m.address});
    return queue_flush();
  }
  port_watch_timer_.start(proc::port_poll_interval(std::chrono::duration<double>(now - w.since)));
}

}  // namespace dshpty::shell
