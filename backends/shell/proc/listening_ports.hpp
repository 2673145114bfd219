// The TCP ports a set of processes listens on (a session's tree), with the owning pid and
// its command: what `until: {port}` waits for and what `list` shows.
//
// How (docs/shell-backend.md, "Listening ports"): the socket inodes come from each
// process's /proc/<pid>/fd links ("socket:[INODE]"); the listening sockets from the
// kernel's tables of the process's own network namespace, so a confined session's tree (its
// own namespace) is seen as it is, with no setns (which would need a thread or privilege).
// Two sources of the tables, measured (docs/performance.md):
//   proc_net   /proc/<pid>/net/tcp and tcp6, read once per namespace: works for any
//              namespace, but lists every TCP socket of it (established ones too);
//   sock_diag  a NETLINK_SOCK_DIAG dump filtered to LISTEN by the kernel: O(listeners), but
//              a netlink socket sees only the caller's namespace.
// `automatic` uses sock_diag for the pids in the caller's namespace and proc_net for any
// other. Synchronous, non-blocking (procfs and a netlink dump answer at once), no threads,
// and bounded: at most limits.max_fds fd links and limits.max_table_bytes of tables a scan.
// A process that exits or cannot be read meanwhile is skipped and the scan says so
// (complete = false): "not seen" is no proof that nothing listens.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dshpty/result.hpp"

namespace dshpty::proc {

struct ListeningSocket {
  std::uint16_t port = 0;
  std::string address;  // "127.0.0.1", "0.0.0.0", "::", "::1", "::ffff:127.0.0.1"
  pid_t pid = 0;        // the first of `pids` (in the order given) holding the socket
  std::string command;  // its /proc/<pid>/comm
  std::uint64_t inode = 0;
};

struct PortScan {
  std::vector<ListeningSocket> sockets;  // ordered by port, then address
  bool complete = true;  // false: a bound was hit, or a process or table could not be read
};

enum class PortSource { automatic, proc_net, sock_diag };

struct PortScanLimits {
  std::size_t max_fds = 1 << 16;               // fd links read, over all processes
  std::size_t max_table_bytes = 16 << 20;      // bytes of /proc/<pid>/net/tcp{,6} read
};

// The TCP sockets in LISTEN that any of `pids` holds. BACKEND_FAILED only when the source
// asked for cannot work at all (sock_diag refused by the kernel, or sock_diag asked for
// pids in another namespace); a vanished process is no error.
Result<PortScan> scan_listening_ports(std::span<const pid_t> pids,
                                      PortSource source = PortSource::automatic,
                                      PortScanLimits limits = {});

// The sockets of `pids` listening on `port` only: what a wait for a port polls. The
// namespaces' listeners come first and the fd links are read only when something listens
// on the port, and only until its owner is found, so a wait costs a stat per process and a
// dump per namespace until the port opens. Errors and `complete` as above.
Result<PortScan> scan_port(std::span<const pid_t> pids, std::uint16_t port,
                           PortSource source = PortSource::automatic, PortScanLimits limits = {});

// The pids of the tree under `root` (root first, parents before children), at most
// `limit`; empty when root is gone. Through the children files (proc/process_tree.hpp),
// else a scan of /proc.
std::vector<pid_t> tree_pids(pid_t root, std::size_t limit = 1 << 16);

}  // namespace dshpty::proc
