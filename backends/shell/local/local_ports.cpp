// The local channel's view of the ports its tree listens on (`until: {port}`): the tree
// under the helper (so a server that left the shell's tree by setsid and was adopted by the
// helper, the session's subreaper, is still the session's), scanned by proc::scan_port; for
// a send, only the processes its command made (proc::job_processes).
#include "local/local_channel.hpp"
#include "proc/job_stop.hpp"
#include "proc/listening_ports.hpp"
#include "proc/procfs.hpp"

namespace dshpty::shell {

Result<std::optional<SendMatch>> LocalChannel::port_listener(std::uint16_t port, std::uint64_t since_ticks) const {
  if (helper_pid_ <= 0) return std::optional<SendMatch>{};
  procfs::Stat shell{};
  const pid_t root = shell_pid_ > 0 && procfs::read_stat(shell_pid_, shell) ? shell.ppid : helper_pid_;
  const std::vector<pid_t> pids =
      since_ticks == 0 ? proc::tree_pids(helper_pid_) : proc::job_processes(root, shell_pid_, since_ticks);
  auto scan = proc::scan_port(pids, port);
  if (!scan) return scan.error();
  for (const proc::ListeningSocket& socket : scan->sockets) {
    if (socket.port != port || socket.pid <= 0) continue;  // the owner not found yet
    return std::optional<SendMatch>{SendMatch{.output = std::nullopt, .port = port, .pid = socket.pid,
                                              .address = socket.address}};
  }
  return std::optional<SendMatch>{};
}

std::optional<ProcessChannel::TreeLook> LocalChannel::look_at_tree() const {
  if (helper_pid_ <= 0 || shell_pid_ <= 0) return std::nullopt;
  // Under the shell's parent (the session's subreaper): the session's processes, a setsid
  // server it adopted among them, and no sandbox's own helpers above it.
  procfs::Stat shell{};
  const pid_t root = procfs::read_stat(shell_pid_, shell) ? shell.ppid : helper_pid_;
  const std::vector<pid_t> pids = proc::tree_pids(root);
  TreeLook out;
  out.processes = pids.size() >= 2 ? pids.size() - 2 : 0;  // not the subreaper, not the shell
  if (auto scan = proc::scan_listening_ports(pids)) {
    for (const proc::ListeningSocket& socket : scan->sockets)
      out.listening.push_back({.port = socket.port, .address = socket.address, .pid = socket.pid, .command = socket.command});
  }
  return out;
}

}  // namespace dshpty::shell
