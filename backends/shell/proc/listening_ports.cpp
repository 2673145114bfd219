#include "proc/listening_ports.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "proc/comm.hpp"
#include "proc/process_tree.hpp"
#include "proc/procfs.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::proc {
namespace {

constexpr int kTcpListen = 10;  // TCP_LISTEN in the kernel's enum; "0A" in the tables

// A socket found in a table, before its owner is known.
struct Listener {
  std::uint64_t inode;
  std::uint16_t port;
  std::string address;
};

// The inode of a namespace file, 0 when unreadable.
std::uint64_t netns_of(const char* path) {
  struct stat st {};
  if (::stat(path, &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_ino);
}

std::string format_address(int family, const void* bytes) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (!::inet_ntop(family, bytes, buf, sizeof buf)) return {};
  return buf;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// n hex digits at p as a number; false when one is not a digit.
bool parse_hex(const char*& p, int n, std::uint32_t& out) {
  out = 0;
  for (int i = 0; i < n; ++i) {
    int d = hex_digit(p[i]);
    if (d < 0) return false;
    out = out << 4 | static_cast<std::uint32_t>(d);
  }
  p += n;
  return true;
}

// One row of /proc/net/tcp{,6}: "  0: 0100007F:1F90 00000000:0000 0A ... uid timeout inode".
// The address is the kernel's __be32 words printed as host-order numbers with %08X.
bool parse_row(const char* p, bool v6, Listener& out) {
  while (*p == ' ') ++p;
  while (*p && *p != ':') ++p;
  if (*p != ':') return false;
  ++p;
  while (*p == ' ') ++p;
  unsigned char addr[16];
  int words = v6 ? 4 : 1;
  for (int w = 0; w < words; ++w) {
    std::uint32_t word;
    if (!parse_hex(p, 8, word)) return false;
    std::memcpy(addr + 4 * w, &word, 4);
  }
  std::uint32_t port;
  if (*p++ != ':' || !parse_hex(p, 4, port)) return false;
  // The remote address, then the state.
  while (*p == ' ') ++p;
  while (*p && *p != ' ') ++p;
  while (*p == ' ') ++p;
  std::uint32_t state;
  if (!parse_hex(p, 2, state) || state != kTcpListen) return false;
  // Skip tx:rx, tr:when, retrnsmt, uid, timeout: the inode is the 10th field.
  for (int field = 0; field < 5; ++field) {
    while (*p == ' ') ++p;
    while (*p && *p != ' ') ++p;
  }
  while (*p == ' ') ++p;
  long inode = 0;
  if (!procfs::parse_decimal(p, inode) || inode <= 0) return false;
  out.inode = static_cast<std::uint64_t>(inode);
  out.port = static_cast<std::uint16_t>(port);
  out.address = format_address(v6 ? AF_INET6 : AF_INET, addr);
  return true;
}

// The LISTEN rows of one table, read in 64 KiB steps (a busy namespace has many rows).
// False when it cannot be read or the byte budget ran out.
bool read_table(const char* path, bool v6, std::size_t& budget, std::vector<Listener>& out) {
  UniqueFd fd(procfs::open_file(path));
  if (!fd.valid()) return false;
  std::string pending;
  char buf[64 * 1024];
  for (;;) {
    if (budget == 0) return false;
    ssize_t n = ::read(fd.get(), buf, std::min(sizeof buf, budget));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    budget -= static_cast<std::size_t>(n);
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      pending[nl] = '\0';
      Listener row;
      if (parse_row(pending.c_str() + start, v6, row)) out.push_back(std::move(row));
    }
    pending.erase(0, start);
  }
  return true;
}

// The LISTEN sockets of the caller's namespace, from a sock_diag dump per family.
Result<std::vector<Listener>> dump_sock_diag() {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG));
  if (!fd.valid()) return make_system_error(Code::BACKEND_FAILED, "sock_diag socket", errno);
  std::vector<Listener> out;
  for (int family : {AF_INET, AF_INET6}) {
    struct {
      nlmsghdr header;
      inet_diag_req_v2 request;
    } message{};
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    message.request.sdiag_family = static_cast<std::uint8_t>(family);
    message.request.sdiag_protocol = IPPROTO_TCP;
    message.request.idiag_states = 1u << kTcpListen;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd.get(), &message, sizeof message, 0, reinterpret_cast<sockaddr*>(&kernel),
                 sizeof kernel) < 0)
      return make_system_error(Code::BACKEND_FAILED, "sock_diag request", errno);
    // The kernel fills each reply as it is read: a dump never waits on anything outside.
    alignas(nlmsghdr) char buf[32 * 1024];
    for (bool done = false; !done;) {
      ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return make_system_error(Code::BACKEND_FAILED, "sock_diag reply", errno);
      if (n == 0) break;
      int left = static_cast<int>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_type == NLMSG_DONE) {
          done = true;
          break;
        }
        if (h->nlmsg_type == NLMSG_ERROR) {
          auto* err = static_cast<nlmsgerr*>(NLMSG_DATA(h));
          return make_system_error(Code::BACKEND_FAILED, "sock_diag dump", -err->error);
        }
        auto* msg = static_cast<inet_diag_msg*>(NLMSG_DATA(h));
        Listener row;
        row.inode = msg->idiag_inode;
        row.port = ntohs(msg->id.idiag_sport);
        row.address = format_address(msg->idiag_family, msg->id.idiag_src);
        if (row.inode != 0) out.push_back(std::move(row));
      }
    }
  }
  return out;
}

// "socket:[12345]" -> 12345, else 0.
std::uint64_t socket_inode(const char* link, ssize_t len) {
  static constexpr char kPrefix[] = "socket:[";
  constexpr ssize_t kPrefixLen = sizeof kPrefix - 1;
  if (len <= kPrefixLen + 1 || std::memcmp(link, kPrefix, kPrefixLen) != 0 || link[len - 1] != ']')
    return 0;
  std::uint64_t inode = 0;
  for (ssize_t i = kPrefixLen; i < len - 1; ++i) {
    if (link[i] < '0' || link[i] > '9') return 0;
    inode = inode * 10 + static_cast<std::uint64_t>(link[i] - '0');
  }
  return inode;
}

// The listeners of namespace `ns`, read through `pid` (one of its processes).
Status fetch_listeners(std::uint64_t ns, pid_t pid, PortSource source, std::uint64_t own_ns,
                       std::size_t& budget, std::vector<Listener>& out, bool& complete) {
  bool diag = source == PortSource::sock_diag || (source == PortSource::automatic && ns == own_ns);
  if (diag) {
    if (ns != own_ns)
      return make_error(Code::BACKEND_FAILED, "sock_diag sees only this process's network namespace");
    auto dumped = dump_sock_diag();
    if (dumped.ok()) {
      out.insert(out.end(), dumped->begin(), dumped->end());
      return {};
    }
    if (source == PortSource::sock_diag) return dumped.error();
    // automatic: the tables still work.
  }
  bool ok4 = read_table(procfs::Path(pid).text("/net/tcp").c_str(), false, budget, out);
  bool ok6 = read_table(procfs::Path(pid).text("/net/tcp6").c_str(), true, budget, out);
  // A kernel without IPv6 has no tcp6 table; that is no gap.
  if (!ok4 || (!ok6 && ::access(procfs::Path(pid).text("/net/tcp6").c_str(), F_OK) == 0))
    complete = false;
  return {};
}

// Reads pid's fd links, calling on_socket(inode) for each socket; false when it could not
// be listed. Stops (returning true) when on_socket returns true or the fd budget runs out.
template <class F>
bool for_each_socket(pid_t pid, std::size_t& fds_left, bool& complete, F&& on_socket) {
  bool listed = procfs::for_each_numeric_entry(procfs::Path(pid).text("/fd").c_str(), [&](pid_t fd) {
    if (fds_left == 0) {
      complete = false;
      return true;
    }
    --fds_left;
    char link[64];
    ssize_t len = ::readlink(procfs::Path(pid).text("/fd/").number(fd).c_str(), link, sizeof link);
    std::uint64_t inode = len > 0 ? socket_inode(link, len) : 0;
    return inode != 0 && on_socket(inode);
  });
  if (!listed) complete = false;  // gone, or not ours to read
  return listed;
}

// The sockets of `listeners` that `owners` maps to a pid, as the result's rows.
void add_owned(std::vector<Listener>& listeners, std::unordered_map<std::uint64_t, pid_t>& owners,
               PortScan& scan) {
  std::unordered_map<pid_t, std::string> commands;
  for (Listener& l : listeners) {
    auto owner = owners.find(l.inode);
    if (owner == owners.end() || owner->second == 0) continue;
    ListeningSocket s;
    s.port = l.port;
    s.address = std::move(l.address);
    s.pid = owner->second;
    s.inode = l.inode;
    auto [cached, fresh] = commands.try_emplace(s.pid);
    if (fresh) cached->second = read_comm(s.pid);
    s.command = cached->second;
    owners.erase(owner);  // one entry per socket, even if two tables list it
    scan.sockets.push_back(std::move(s));
  }
  std::sort(scan.sockets.begin(), scan.sockets.end(), [](const auto& a, const auto& b) {
    return a.port != b.port ? a.port < b.port : a.address < b.address;
  });
}

}  // namespace

Result<PortScan> scan_listening_ports(std::span<const pid_t> pids, PortSource source,
                                      PortScanLimits limits) {
  PortScan scan;
  // Socket inode -> the first pid holding it; namespace -> a pid to read its tables through.
  std::unordered_map<std::uint64_t, pid_t> owners;
  std::map<std::uint64_t, pid_t> namespaces;
  std::size_t fds_left = limits.max_fds;
  for (pid_t pid : pids) {
    bool has_socket = false;
    for_each_socket(pid, fds_left, scan.complete, [&](std::uint64_t inode) {
      owners.emplace(inode, pid);
      has_socket = true;
      return false;
    });
    if (has_socket) {
      std::uint64_t ns = netns_of(procfs::Path(pid).text("/ns/net").c_str());
      if (ns == 0) scan.complete = false;
      else namespaces.emplace(ns, pid);
    }
  }
  if (owners.empty()) return scan;
  const std::uint64_t own_ns = netns_of("/proc/self/ns/net");
  std::vector<Listener> listeners;
  std::size_t budget = limits.max_table_bytes;
  for (auto [ns, pid] : namespaces) {
    Status fetched = fetch_listeners(ns, pid, source, own_ns, budget, listeners, scan.complete);
    if (!fetched.ok()) return fetched.error();
  }
  add_owned(listeners, owners, scan);
  return scan;
}

Result<PortScan> scan_port(std::span<const pid_t> pids, std::uint16_t port, PortSource source,
                           PortScanLimits limits) {
  PortScan scan;
  // The namespaces first (one stat a process), then their listeners on `port`: while
  // nothing listens there, no fd is read.
  std::vector<std::uint64_t> ns_of(pids.size());
  std::map<std::uint64_t, pid_t> namespaces;
  for (std::size_t i = 0; i < pids.size(); ++i) {
    ns_of[i] = netns_of(procfs::Path(pids[i]).text("/ns/net").c_str());
    if (ns_of[i] == 0) scan.complete = false;
    else namespaces.emplace(ns_of[i], pids[i]);
  }
  const std::uint64_t own_ns = netns_of("/proc/self/ns/net");
  std::size_t budget = limits.max_table_bytes;
  std::vector<Listener> listeners;
  std::map<std::uint64_t, std::size_t> wanted_in;  // namespace -> its listeners on the port
  std::unordered_map<std::uint64_t, pid_t> owners;  // wanted inode -> owner (0: not yet)
  for (auto [ns, pid] : namespaces) {
    std::vector<Listener> all;
    Status fetched = fetch_listeners(ns, pid, source, own_ns, budget, all, scan.complete);
    if (!fetched.ok()) return fetched.error();
    for (Listener& l : all) {
      if (l.port != port) continue;
      owners.emplace(l.inode, 0);
      ++wanted_in[ns];
      listeners.push_back(std::move(l));
    }
  }
  if (owners.empty()) return scan;
  std::size_t left = owners.size();
  std::size_t fds_left = limits.max_fds;
  for (std::size_t i = 0; i < pids.size() && left > 0; ++i) {
    if (wanted_in.find(ns_of[i]) == wanted_in.end()) continue;
    for_each_socket(pids[i], fds_left, scan.complete, [&](std::uint64_t inode) {
      auto it = owners.find(inode);
      if (it != owners.end() && it->second == 0) {
        it->second = pids[i];
        --left;
      }
      return left == 0;
    });
  }
  add_owned(listeners, owners, scan);
  return scan;
}

std::vector<pid_t> tree_pids(pid_t root, std::size_t limit) {
  std::vector<pid_t> pids;
  bool walked = walk_process_tree(root, [&](pid_t pid) {
    procfs::Stat st;
    if (!procfs::read_stat(pid, st)) return TreeStep{.stop = false, .descend = false};
    pids.push_back(pid);
    return TreeStep{.stop = pids.size() >= limit, .descend = true, .threads = st.threads};
  }, limit);
  if (walked) return pids;
  // No children files: one pass over /proc for every (ppid, pid), then the tree from it.
  std::multimap<pid_t, pid_t> children;
  procfs::for_each_numeric_entry("/proc", [&](pid_t pid) {
    procfs::Stat st;
    if (procfs::read_stat(pid, st)) children.emplace(st.ppid, pid);
    return false;
  });
  procfs::Stat st;
  if (!procfs::read_stat(root, st)) return pids;
  pids.push_back(root);
  for (std::size_t next = 0; next < pids.size() && pids.size() < limit; ++next) {
    auto [first, last] = children.equal_range(pids[next]);
    for (auto it = first; it != last && pids.size() < limit; ++it) pids.push_back(it->second);
  }
  return pids;
}

}  // namespace dshpty::proc
