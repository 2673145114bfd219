#include "limits/cgroup_location.hpp"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>

#include "limits/cgroup_wire.hpp"
#include "proc/pidfd.hpp"
#include "limits/leftover_sweep.hpp"

namespace dshpty::shell::limits {

namespace {

std::optional<std::string>& parent_override() {
  static std::optional<std::string> dir;
  return dir;
}

// A small kernel file's text, or nullopt (errno set).
std::optional<std::string> read_small(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      errno = err;
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const char a = s[i + 1], b = s[i + 2], c = s[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

bool lists(std::string_view comma_list, std::string_view name) {
  for (auto item : split(comma_list, ',')) {
    if (item == name) return true;
  }
  return false;
}

// `path` (in the hierarchy) as seen below a mount of `root` at `mount_point`.
std::optional<std::string> visible_at(const CgroupMount& m, const std::string& path) {
  if (m.root == "/") return path == "/" ? m.mount_point : m.mount_point + path;
  if (path == m.root) return m.mount_point;
  if (path.compare(0, m.root.size(), m.root) == 0 && path.size() > m.root.size() && path[m.root.size()] == '/') {
    return m.mount_point + path.substr(m.root.size());
  }
  return std::nullopt;
}

Error fail(std::string what, int err = 0) {
  if (err) return make_system_error(Code::BACKEND_FAILED, "limits: " + what, err);
  return make_error(Code::BACKEND_FAILED, "limits: " + what);
}

struct Found {
  std::string dir;
  bool v2 = false;
};

// The host's own cgroup directory for `controller`.
Result<Found> find_parent(std::string_view controller) {
  if (const auto& dir = parent_override()) return Found{*dir, false};
  const auto self = read_small("/proc/self/cgroup");
  if (!self) return fail("cannot read /proc/self/cgroup", errno);
  const auto info = read_small("/proc/self/mountinfo");
  if (!info) return fail("cannot read /proc/self/mountinfo", errno);
  const auto mounts = cgroup_mounts(*info);
  if (auto path = cgroup_path_in(*self, controller)) {
    for (const auto& m : mounts) {
      if (m.v2) continue;
      bool carries = false;
      for (const auto& c : m.controllers) carries = carries || c == controller;
      if (!carries) continue;
      if (auto dir = visible_at(m, *path)) return Found{*dir, false};
    }
    return fail("the cgroup v1 " + std::string(controller) + " hierarchy's " + *path +
                " is not mounted where this process can see it");
  }
  if (auto path = cgroup_path_in(*self, "")) {
    for (const auto& m : mounts) {
      if (!m.v2) continue;
      auto dir = visible_at(m, *path);
      if (!dir) continue;
      // Delegated: the host's cgroup passes the controller to its children. Read only:
      // enabling it would write a file of the host's own cgroup.
      const auto subtree = read_small(*dir + "/cgroup.subtree_control");
      std::string words = subtree ? *subtree : "";
      while (!words.empty() && (words.back() == '\n' || words.back() == ' ')) words.pop_back();
      bool on = false;
      for (auto w : split(words, ' ')) on = on || w == controller;
      if (!on) {
        return fail("cgroup v2 does not delegate the " + std::string(controller) + " controller below " +
                    *dir + " (its cgroup.subtree_control is \"" + words + "\")");
      }
      return Found{*dir, true};
    }
    return fail("the unified cgroup hierarchy's " + *path + " is not mounted where this process can see it");
  }
  return fail("no cgroup hierarchy carries the " + std::string(controller) + " controller");
}

std::string random_suffix() {
  std::uint32_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = static_cast<std::uint32_t>(::getpid());
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(hex[(r >> (i * 4)) & 15]);
  return out;
}

}  // namespace

Status SessionDirs::remove() {
  Error first;
  std::vector<std::string> left, left_kinds;
  for (std::size_t i = 0; i < paths_.size(); ++i) {
    if (::rmdir(paths_[i].c_str()) == 0 || errno == ENOENT) continue;
    if (!first) first = fail("the session cgroup " + paths_[i] + " could not be removed", errno);
    left.push_back(paths_[i]);
    left_kinds.push_back(kinds_[i]);
  }
  paths_ = std::move(left);
  kinds_ = std::move(left_kinds);
  if (first) return first;
  return {};
}

long SessionDirs::end_members() {
  auto listed = [](const std::string& dir) -> std::optional<std::vector<pid_t>> {
    const auto text = read_small(dir + "/cgroup.procs");
    if (!text) return std::nullopt;
    std::vector<pid_t> pids;
    for (auto line : split(*text, '\n')) {
      if (!line.empty()) pids.push_back(static_cast<pid_t>(std::strtol(std::string(line).c_str(), nullptr, 10)));
    }
    return pids;
  };
  long count = 0;
  for (const std::string& dir : paths_) {
    const auto first = listed(dir);
    if (!first) {
      if (errno == ENOENT) continue;  // removed already
      return -1;
    }
    count += static_cast<long>(first->size());
    if (first->empty()) continue;
    std::vector<std::pair<pid_t, proc::UniqueFd>> pinned;
    for (pid_t pid : *first) {
      if (pid > 0) pinned.emplace_back(pid, proc::UniqueFd(sys::pidfd_open(pid, 0)));
    }
    const auto again = listed(dir);
    if (!again) return errno == ENOENT ? count : -1;
    for (auto& [pid, fd] : pinned) {
      if (fd.valid() && std::find(again->begin(), again->end(), pid) != again->end()) {
        (void)sys::pidfd_send_signal(fd.get(), SIGKILL);
      }
    }
  }
  return count;
}

SessionDirs::Counts SessionDirs::counts() const {
  Counts c;
  auto counter = [](const std::string& file, std::string_view key) -> std::uint64_t {
    const auto text = read_small(file);
    if (!text) return 0;
    for (auto line : split(*text, '\n')) {
      if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ' ') {
        return std::strtoull(std::string(line.substr(key.size() + 1)).c_str(), nullptr, 10);
      }
    }
    return 0;
  };
  for (std::size_t i = 0; i < paths_.size(); ++i) {
    const std::string& kind = kinds_[i];
    if (kind == "pids" || kind == "v2") c.pids_refused += counter(paths_[i] + "/pids.events", "max");
    if (kind == "memory") c.oom_kills += counter(paths_[i] + "/memory.oom_control", "oom_kill");
    if (kind == "v2") c.oom_kills += counter(paths_[i] + "/memory.events", "oom_kill");
  }
  return c;
}

void set_parent_override_for_tests(std::optional<std::string> dir) { parent_override() = std::move(dir); }

std::string session_name_prefix() { return "dshpty-" + std::to_string(::getpid()) + "-"; }

std::optional<std::string> cgroup_path_in(std::string_view text, std::string_view controller) {
  for (auto line : split(text, '\n')) {
    const auto first = line.find(':');
    if (first == std::string_view::npos) continue;
    const auto second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const auto ids = line.substr(0, first);
    const auto names = line.substr(first + 1, second - first - 1);
    const auto path = line.substr(second + 1);
    if (controller.empty() ? (ids == "0" && names.empty()) : lists(names, controller)) {
      return std::string(path);
    }
  }
  return std::nullopt;
}

std::vector<CgroupMount> cgroup_mounts(std::string_view info) {
  std::vector<CgroupMount> out;
  for (auto line : split(info, '\n')) {
    const auto dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const auto left = split(line.substr(0, dash), ' ');
    const auto right = split(line.substr(dash + 3), ' ');
    if (left.size() < 5 || right.size() < 3) continue;
    CgroupMount m;
    if (right[0] == "cgroup2") {
      m.v2 = true;
    } else if (right[0] != "cgroup") {
      continue;
    }
    m.root = unescape(left[3]);
    m.mount_point = unescape(left[4]);
    if (!m.v2) {
      for (auto opt : split(right[2], ',')) m.controllers.emplace_back(opt);
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<std::string> own_cgroup_dir(std::string_view controller) {
  auto found = find_parent(controller);
  if (!found) return std::nullopt;
  return found->dir;
}

namespace {

// One try at the session's cgroups; *taken when a directory just made was locked by a sweep
// of another host before this one could (it removes it: try again under another name).
Result<Placement> place_once(const Limits& limits, bool* taken) {
  Placement p;
  p.name = session_name_prefix() + random_suffix();
  p.made = std::make_unique<SessionDirs>();
  std::vector<std::string> kinds;  // as --cgroup-dir says them, in fd order
  for (std::string_view controller : {"pids", "memory", "cpu"}) {
    const bool wanted = controller == "pids" ? limits.pids.has_value()
                        : controller == "memory" ? limits.memory.has_value()
                                                 : limits.cpu.has_value();
    if (!wanted) continue;
    auto found = find_parent(controller);
    if (!found) return found.error();
    const std::string kind = found->v2 ? "v2" : std::string(controller);
    bool have = false;
    for (const auto& k : kinds) have = have || k == kind;
    if (have) continue;  // v2: one directory serves every controller
    proc::UniqueFd dir(::open(found->dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) return fail("cannot open the host's cgroup " + found->dir, errno);
    struct statfs fs {};
    if (::fstatfs(dir.get(), &fs) < 0) return fail("cannot stat the host's cgroup " + found->dir, errno);
    const bool is_cgroup = fs.f_type == CGROUP_SUPER_MAGIC || fs.f_type == CGROUP2_SUPER_MAGIC;
    if (!is_cgroup) return fail(found->dir + " is not a cgroup file system", ENOTSUP);
    if (controller == "memory" && !found->v2) {
      // With use_hierarchy 0 a child's use does not count against its parent's limit: the
      // session would slip out of the host's own accounting. Read only, never written.
      const auto use = read_small(found->dir + "/memory.use_hierarchy");
      if (!use) return fail("cannot read " + found->dir + "/memory.use_hierarchy", errno);
      if (use->compare(0, 1, "0") == 0) {
        return fail("memory: " + found->dir + " has use_hierarchy 0, so a session's memory would escape "
                    "the host's own limit");
      }
    }
    sweep_leftovers(dir.get(), found->dir);
    // The session's own directory: the only thing made here. A failure after this point
    // removes what was made (p.made's destructor). The host's user's alone: another user
    // who could open it could also hold its lock, and fail this open (or a sweep).
    if (::mkdirat(dir.get(), p.name.c_str(), 0700) < 0) {
      return fail("cannot create the session cgroup " + found->dir + "/" + p.name, errno);
    }
    p.made->add(found->dir + "/" + p.name, kind);
    // Locked at once (limits/leftover_sweep.hpp), and still this name's once locked.
    proc::UniqueFd session(::openat(dir.get(), p.name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
    struct stat self {}, named {};
    if (!session.valid() || !lock_session_dir(session.get()) || ::fstat(session.get(), &self) < 0 ||
        ::fstatat(dir.get(), p.name.c_str(), &named, AT_SYMLINK_NOFOLLOW) < 0 || self.st_ino != named.st_ino) {
      *taken = true;
      return fail("cannot open the session cgroup " + found->dir + "/" + p.name, errno);
    }
    kinds.push_back(kind);
    p.dirs.push_back(std::move(session));
  }
  if (kinds.size() > static_cast<std::size_t>(kMaxCgroupDirs)) return fail("too many cgroup hierarchies");
  for (const auto& k : kinds) {
    p.helper_args.push_back("--cgroup-dir");
    p.helper_args.push_back(k);
  }
  if (limits.pids) {
    p.helper_args.push_back("--limit-pids");
    p.helper_args.push_back(std::to_string(*limits.pids));
  }
  if (limits.memory) {
    p.helper_args.push_back("--limit-memory");
    p.helper_args.push_back(std::to_string(*limits.memory));
  }
  if (limits.cpu) {
    const auto quota = static_cast<long long>(std::llround(*limits.cpu * static_cast<double>(kCpuPeriodUs)));
    p.helper_args.push_back("--limit-cpu-us");
    p.helper_args.push_back(std::to_string(quota < 1000 ? 1000 : quota));
  }
  return p;
}

}  // namespace

Result<Placement> place_session_cgroups(const Limits& limits) {
  for (int attempt = 1;; ++attempt) {
    bool taken = false;
    auto placed = place_once(limits, &taken);
    if (placed || !taken || attempt == 3) return placed;
  }
}

}  // namespace dshpty::shell::limits
