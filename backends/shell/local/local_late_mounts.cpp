// The local channel's starts with late mounts (LaunchPlan::late_mounts): a confined
// session's socket masks listed right before bwrap starts, and bwrap started again when one
// of them went in between (sandbox/socket_masks.hpp).
#include <errno.h>
#include <fcntl.h>

#include "local/local_channel.hpp"

namespace dshpty::shell {

Result<LaunchedHelper> LocalChannel::spawn_with_late_mounts(int slave_fd, int socket_fd, int diag_fd) {
  auto& plan = launch_.plan;
  if (!plan.late_mounts) return spawn_helper(plan, slave_fd, socket_fd, diag_fd);
  // The fds the helper inherits are the caller's until the launch returns: a start made
  // again later needs copies of its own, kept until the helper spoke.
  if (kept_fds_.empty() && !plan.passed_fds.empty()) {
    for (int& fd : plan.passed_fds) {
      UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
      if (!copy.valid()) return make_system_error(Code::BACKEND_FAILED, "keep the helper's fds", errno);
      fd = copy.get();
      kept_fds_.push_back(std::move(copy));
    }
  }
  const auto at = plan.argv.begin() + static_cast<std::ptrdiff_t>(plan.late_mounts_at);
  const std::vector<std::string> late = plan.late_mounts->list();
  plan.argv.insert(at, late.begin(), late.end());
  auto helper = spawn_helper(plan, slave_fd, socket_fd, diag_fd);
  const auto from = plan.argv.begin() + static_cast<std::ptrdiff_t>(plan.late_mounts_at);
  plan.argv.erase(from, from + static_cast<std::ptrdiff_t>(late.size()));
  return helper;
}

void LocalChannel::wrapper_mounts_done() {
  if (!launch_.plan.late_mounts) return;
  launch_.plan.late_mounts->settle();
  kept_fds_.clear();
}

Status LocalChannel::start_again() {
  ++starts_again_;
  for (ev_io* w : {&master_read_, &master_write_, &control_io_, &pidfd_io_}) ev_io_stop(loop_, w);
  master_.reset();
  control_.reset();
  pidfd_.reset();
  diag_.reset();
  helper_pid_ = -1;
  helper_gone_ = false;
  quiescent_reported_ = false;
  return start();
}

}  // namespace dshpty::shell
