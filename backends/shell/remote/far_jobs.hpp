// The host's side of a remote session's background jobs (docs/remote.md, "Jobs"): what the
// stream channel keeps between its questions to the far side (WATCH_PORT, LOOK, STOP) and
// their answers. The channel's calls are synchronous and the answers one round trip away,
// so each call says what the far side last answered and asks again:
//   - a port wait: the far side watches the port next to the tree and says once when it
//     opens (PORT_SEEN); the session hears it at once (ChannelEvents::on_port_seen) and its
//     own poll only renews the watch;
//   - the tree's look (list's activity): the last TREE, asked again at each look, after a
//     port opened and after a stop;
//   - a stop: a FarStop the session holds until STOPPED answers it, or the link goes (the
//     stop is then unconfirmed), or kStopAnswerBound passes with no answer.
#pragma once

#include <ev.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "loop/timer.hpp"
#include "process_channel.hpp"
#include "proc/job_stop.hpp"

namespace dshpty::shell {

// The far stop runs at most three bounded steps of 1 s (proc::StopTimings); this leaves a
// slow link room and still answers a far side that never does.
inline constexpr std::chrono::seconds kStopAnswerBound{10};
// A port watch is renewed this often while a send waits (the far side drops it after
// frames::kWatchPortForMs unrenewed).
inline constexpr double kWatchRenewSeconds = 0.5;

// One stop waiting for the far side's STOPPED: shared by the session's FarStop and the
// channel's table, so either may go first.
class FarStopWait : public std::enable_shared_from_this<FarStopWait> {
 public:
  FarStopWait(struct ev_loop* loop, proc::JobStop::Done done);
  // Calls `done` once (later answers are ignored).
  void answer(proc::StopReport report);
  // An unconfirmed end: nothing proves the job's processes gone.
  void unconfirmed(const std::string& why);

 private:
  void on_deadline();
  proc::JobStop::Done done_;
  Timer deadline_;
};

class FarStop final : public proc::StopHandle {
 public:
  explicit FarStop(std::shared_ptr<FarStopWait> wait) : wait_(std::move(wait)) {}

 private:
  std::shared_ptr<FarStopWait> wait_;
};

struct FarJobs {
  std::string far_build;  // the far side's WELCOME: named when it cannot do this
  std::uint32_t next_seq = 1;
  struct Watch {
    std::uint32_t seq = 0;
    std::uint16_t port = 0;  // 0: none
    ev_tstamp renewed = 0;
    std::optional<SendMatch> seen;  // PORT_SEEN of this watch
  } watch;
  std::optional<ProcessChannel::TreeLook> look;  // the last TREE
  std::optional<std::uint32_t> look_asked;       // a LOOK without its TREE yet
  std::optional<std::uint32_t> port_look;        // the LOOK a PORT_SEEN is told after
  std::map<std::uint32_t, std::weak_ptr<FarStopWait>> stops;

  // The link went: every stop under way is unconfirmed, a look asked is not coming.
  void link_gone(const std::string& why);
};

}  // namespace dshpty::shell
