// The stream channel's background jobs (remote/far_jobs.hpp; docs/remote.md, "Jobs"): the
// session's calls for until.port, list's activity and stop, and the far side's answers.
#include "remote/far_jobs.hpp"
#include "remote/stream_channel.hpp"

#include <unistd.h>

namespace dshpty::shell {

FarStopWait::FarStopWait(struct ev_loop* loop, proc::JobStop::Done done) : done_(std::move(done)) {
  deadline_.bind<&FarStopWait::on_deadline>(loop, this);
  deadline_.start(kStopAnswerBound);
}

void FarStopWait::answer(proc::StopReport report) {
  deadline_.stop();
  if (!done_) return;
  auto done = std::move(done_);
  done_ = nullptr;
  done(std::move(report));  // may destroy the FarStop, never this (the caller holds it)
}

void FarStopWait::unconfirmed(const std::string& why) {
  answer(proc::StopReport{.stopped = false, .signals = {}, .found = {},
                          .remaining = {{.pid = 0, .command = "", .why = why}}});
}

void FarStopWait::on_deadline() {
  auto keep = shared_from_this();  // `done` may drop the session's FarStop, the last owner
  unconfirmed("the far side did not answer the stop within " + std::to_string(kStopAnswerBound.count()) +
              " s: its end is unconfirmed");
}

void FarJobs::link_gone(const std::string& why) {
  auto waiting = std::move(stops);
  stops.clear();
  for (auto& [seq, weak] : waiting) {
    if (auto wait = weak.lock()) wait->unconfirmed("the link to the far side went during the stop (" + why +
                                                   "): the job's end is unconfirmed");
  }
  look_asked.reset();
  port_look.reset();  // the session's tick finds the match without it
}

namespace {
std::string lacks_jobs(const std::string& what, const std::string& build) {
  return what + ": the far side (" + (build.empty() ? std::string("a dshpty-supervisor") : build) +
         ") predates background jobs on remote sessions; update it";
}
}  // namespace

Result<std::optional<SendMatch>> StreamChannel::port_listener(std::uint16_t port, std::uint64_t /*since_ticks: the far helper counts its whole tree*/) const {
  if (!has(frames::kCapJobs)) return make_error(Code::BACKEND_FAILED, lacks_jobs("until.port", jobs_.far_build));
  // Asking changes nothing the channel reports: the frame only goes out.
  return const_cast<StreamChannel*>(this)->watch_port(port);
}

std::optional<SendMatch> StreamChannel::watch_port(std::uint16_t port) {
  FarJobs::Watch& w = jobs_.watch;
  const ev_tstamp now = ev_now(loop_);
  const bool fresh = now - w.renewed <= frames::kWatchPortForMs / 1000.;
  if (w.seen && w.port == port && fresh && !jobs_.port_look) {
    // Said once: the next wait on this port starts a watch of its own. (A PORT_SEEN that
    // came after its wait ended is fresh only as long as the watch would have lasted.)
    std::optional<SendMatch> seen = std::move(w.seen);
    w = {};
    return seen;
  }
  if (w.port != port || !fresh) {
    w = {.seq = jobs_.next_seq++, .port = port, .renewed = now, .seen = std::nullopt};
    if (link_up()) link_.post(frames::WatchPort{.seq = w.seq, .port = port});
  } else if (now - w.renewed >= kWatchRenewSeconds && link_up()) {
    w.renewed = now;
    link_.post(frames::WatchPort{.seq = w.seq, .port = port});
  }
  return std::nullopt;
}

std::optional<ProcessChannel::TreeLook> StreamChannel::look_at_tree() const {
  if (!has(frames::kCapJobs)) return std::nullopt;
  const_cast<StreamChannel*>(this)->ask_look();
  return jobs_.look;
}

void StreamChannel::ask_look() {
  if (jobs_.look_asked || !link_up() || !has(frames::kCapJobs)) return;
  jobs_.look_asked = jobs_.next_seq++;
  link_.post(frames::Look{.seq = *jobs_.look_asked});
}

std::uint64_t StreamChannel::clock_ticks() const { return proc::boot_ticks_now(); }

Result<std::unique_ptr<proc::StopHandle>> StreamChannel::stop_job(proc::JobTimes times, proc::JobStop::Done done) {
  if (!has(frames::kCapJobs)) return make_error(Code::BACKEND_FAILED, lacks_jobs("stop", jobs_.far_build));
  // STOP names a running job's start only: what an ended job left behind is not looked for
  // on a far side yet (never a stop of whatever runs in front now).
  if (times.ended_ticks != 0)
    return make_error(Code::BACKEND_FAILED, "stop: the job has ended; what it left running on the far side cannot be "
                                            "looked for yet (list shows what listens; signal reaches the foreground)");
  const std::uint64_t started_ticks = times.started_ticks;
  if (!link_up()) {
    return make_error(Code::BACKEND_FAILED, "stop: the link to the far side is down" +
                                                (reconnecting_ ? " (reconnecting: " + *reconnecting_ + ")" : std::string()));
  }
  // The far side knows its own clock: it hears how long ago the job's line was written here.
  const auto hz = static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
  const std::uint64_t now = proc::boot_ticks_now();
  const std::uint64_t since_ms = now > started_ticks ? (now - started_ticks) * 1000 / hz : 0;
  auto wait = std::make_shared<FarStopWait>(loop_, std::move(done));
  const std::uint32_t seq = jobs_.next_seq++;
  jobs_.stops[seq] = wait;
  frames::Stop stop{.seq = seq, .since_ms = static_cast<std::uint32_t>(std::min<std::uint64_t>(since_ms, UINT32_MAX)),
                    .input_at = std::nullopt};
  // In the far side's count of input (every host's): it knows when it wrote that byte.
  if (has(frames::kCapStopAt) && times.input_at) stop.input_at = in_base_ + *times.input_at;
  link_.post(stop);
  return std::unique_ptr<proc::StopHandle>(std::make_unique<FarStop>(std::move(wait)));
}

bool StreamChannel::on_job_frame(const frames::Frame& f) {
  using frames::decode;
  const std::string_view p = f.payload;
  switch (f.type) {
    case frames::Type::port_seen: {
      auto s = decode<frames::PortSeen>(p);
      if (!s) return bad("short PORT_SEEN"), true;
      FarJobs::Watch& w = jobs_.watch;
      if (s->seq != w.seq || s->port != w.port) return true;  // a watch given up since
      w.seen = SendMatch{.output = std::nullopt, .port = s->port, .pid = s->pid, .address = s->address};
      if (!link_up()) return events_.on_port_seen(), true;
      // A fresh look, and the session told once its TREE is here: a `list` right after the
      // match shows the listener. (A look already in flight may predate the port.) Lost
      // with the link, the session's own tick still finds the match (watch_port).
      jobs_.look_asked = jobs_.port_look = jobs_.next_seq++;
      link_.post(frames::Look{.seq = *jobs_.port_look});
      return true;
    }
    case frames::Type::tree: {
      auto t = decode<frames::Tree>(p);
      if (!t) return bad("bad TREE"), true;
      if (jobs_.look_asked == t->seq) jobs_.look_asked.reset();
      const bool port_told = jobs_.port_look == t->seq;
      if (port_told) jobs_.port_look.reset();
      if (!t->known) {
        jobs_.look.reset();
        if (port_told) events_.on_port_seen();
        return true;
      }
      TreeLook look;
      look.processes = t->processes;
      for (auto& l : t->listening)
        look.listening.push_back({.port = l.port, .address = std::move(l.address), .pid = l.pid, .command = std::move(l.command)});
      jobs_.look = std::move(look);
      if (port_told) events_.on_port_seen();
      return true;
    }
    case frames::Type::stopped: {
      auto s = decode<frames::Stopped>(p);
      if (!s) return bad("bad STOPPED"), true;
      auto it = jobs_.stops.find(s->seq);
      if (it == jobs_.stops.end()) return true;  // said unconfirmed already
      std::shared_ptr<FarStopWait> wait = it->second.lock();
      jobs_.stops.erase(it);
      ask_look();  // a list after the stop shows what is left
      if (!wait) return true;
      if (!s->refused.empty()) {
        wait->unconfirmed(s->refused);
        return true;
      }
      proc::StopReport report{.stopped = s->stopped, .signals = std::move(s->signals), .found = {}, .remaining = {}};
      for (auto& r : s->remaining) report.remaining.push_back({.pid = r.pid, .command = std::move(r.command), .why = std::move(r.why)});
      wait->answer(std::move(report));
      return true;
    }
    default:
      return false;
  }
}

}  // namespace dshpty::shell
