// A remote or lingering session's limits (supervisor/bridge.hpp; docs/security.md,
// "Resource limits"): this helper makes the session's cgroups below its own, as a host does
// for a local session, so they outlive any host and go with the tree's proven end (the
// local channel removes them once its helper proved the tree gone). A limit reached goes
// to the host as LIMIT_HIT, ahead of the output read after it was seen.
#include "limits/cgroup_location.hpp"
#include "limits/cgroup_wire.hpp"
#include "supervisor/bridge.hpp"

namespace dshpty::shell {

bool Bridge::place_limits(const frames::Open& open, LocalLaunch& launch, limits::Placement& placement) {
  if (!open.has_limits()) return true;
  Limits wanted;
  if (open.limit_pids) wanted.pids = open.limit_pids;
  if (open.limit_memory) wanted.memory = open.limit_memory;
  if (open.limit_cpu_us) wanted.cpu = static_cast<double>(open.limit_cpu_us) / static_cast<double>(limits::kCpuPeriodUs);
  auto placed = limits::place_session_cgroups(wanted);
  if (!placed) {
    // The host's policy asked for them; this machine cannot give them: nothing runs.
    link_.queue(frames::StartFailed{clip(placed.error()->message)});
    queue_flush();
    return false;
  }
  placement = std::move(*placed);
  auto& argv = launch.plan.argv;
  argv.insert(argv.begin() + 1, placement.helper_args.begin(), placement.helper_args.end());
  for (const auto& dir : placement.dirs) launch.plan.passed_fds.push_back(dir.get());
  launch.cgroups = std::move(placement.made);
  limited_ = true;
  return true;
}

void Bridge::report_limit() {
  if (!limited_ || !channel_ || link_down()) return;
  const auto hit = channel_->limit_hit();
  if (!hit || hit == limit_sent_) return;
  limit_sent_ = hit;
  link_.queue(frames::LimitHitFrame{static_cast<std::uint8_t>(hit->kind == LimitKind::pids ? 1 : 2)});
}

void Bridge::on_limit_hit() {
  report_limit();
  if (!link_down()) queue_flush();
}

}  // namespace dshpty::shell
