#include "sandbox/sandbox_paths.hpp"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sandbox/sandbox_git.hpp"

namespace dshpty::shell {

namespace {

Error path_error(const std::string& what, int err) {
  return make_system_error(Code::BACKEND_FAILED, what, err);
}

std::string base_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void add_unique(std::vector<std::string>& list, const std::string& path) {
  if (std::find(list.begin(), list.end(), path) == list.end()) list.push_back(path);
}

}  // namespace

bool strictly_inside(const std::string& path, const std::string& dir) {
  if (dir == "/") return path.size() > 1 && path.front() == '/';
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

bool inside_or_at(const std::string& path, const std::string& dir) {
  return path == dir || strictly_inside(path, dir);
}

bool inside_a_root(const std::string& path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(), [&](const std::string& r) { return inside_or_at(path, r); });
}

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

Result<std::string> resolve_unplanted(const std::string& path, const std::vector<std::string>& writable) {
  if (path.empty() || path.front() != '/') {
    return make_error(Code::BACKEND_FAILED, "path " + path + " is not absolute", {}, EINVAL);
  }
  std::string resolved;  // canonical so far; empty stands for "/"
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      resolved = resolved.empty() ? "" : parent_dir(resolved);
      if (resolved == "/") resolved.clear();
      continue;
    }
    std::string candidate = resolved + "/" + part;
    struct stat st {};
    if (::lstat(candidate.c_str(), &st) < 0) return path_error(candidate, errno);
    if (S_ISLNK(st.st_mode)) {
      for (const auto& root : writable) {
        if (strictly_inside(candidate, root)) {
          return make_error(Code::BACKEND_FAILED,
                            candidate + " is a symbolic link inside the writable root " + root +
                                " (an earlier session may have planted it): a mount there is refused",
                            {}, ELOOP);
        }
      }
      char real[PATH_MAX];
      if (!::realpath(candidate.c_str(), real)) return path_error(candidate, errno);
      resolved = real;
      if (resolved == "/") resolved.clear();
    } else {
      resolved = candidate;
    }
  }
  return resolved.empty() ? std::string("/") : resolved;
}

Result<std::optional<std::string>> protected_target(const std::string& path,
                                                    const std::vector<std::string>& roots) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return path_error("protected path " + path, errno);
  }
  if (S_ISLNK(st.st_mode)) {
    return make_error(Code::BACKEND_FAILED,
                      "protected path " + path + " is a symbolic link: it would be followed onto "
                      "the host, so the session is refused (remove the link)", {}, ELOOP);
  }
  auto canonical = resolve_unplanted(path, roots);
  if (!canonical) return canonical.error();
  return std::optional<std::string>(*canonical);
}

void MountPlan::add(const std::string& path, MountAccess access) {
  for (auto& m : mounts_) {
    if (m.path != path) continue;
    if (access == MountAccess::read_only) m.access = access;  // read-only wins
    return;
  }
  mounts_.push_back({path, access});
}

void MountPlan::pin_ancestors(const std::vector<std::string>& roots) {
  const std::vector<ProtectedMount> mounts = mounts_;
  for (const auto& m : mounts) {
    std::string root;
    for (const auto& r : roots) {
      if (strictly_inside(m.path, r) && r.size() > root.size()) root = r;
    }
    if (root.empty()) continue;
    for (std::string dir = parent_dir(m.path); strictly_inside(dir, root); dir = parent_dir(dir)) {
      add(dir, MountAccess::writable);
    }
  }
}

std::vector<ProtectedMount> MountPlan::ordered() const {
  std::vector<ProtectedMount> out;
  for (const auto& m : mounts_) {
    // A writable mount inside a read-only one would open what that one closes.
    bool covered = m.access == MountAccess::writable &&
                   std::any_of(mounts_.begin(), mounts_.end(), [&](const ProtectedMount& ro) {
                     return ro.access == MountAccess::read_only && inside_or_at(m.path, ro.path);
                   });
    if (!covered) out.push_back(m);
  }
  // Outer paths first, so a protected path inside another is bound over it, not under it.
  std::stable_sort(out.begin(), out.end(), [](const ProtectedMount& a, const ProtectedMount& b) {
    return a.path.size() < b.path.size();
  });
  return out;
}

namespace {

constexpr std::size_t kMaxProtectedEntries = 65536;

// One entry under a read-only mount: a link's target in a root is added to `targets`.
Status check_protected_entry(const std::string& path, const struct stat& st,
                             const std::vector<std::string>& roots, std::vector<std::string>& targets) {
  if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
    return make_error(Code::BACKEND_FAILED,
                      "protected file " + path + " has " + std::to_string(st.st_nlink) +
                          " hard links: another name for it may lie in a writable root, so the "
                          "session is refused",
                      {}, EMLINK);
  }
  if (!S_ISLNK(st.st_mode)) return {};
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n < 0) return path_error("protected path " + path, errno);
  std::string target(buf, static_cast<std::size_t>(n));
  if (target.empty() || target.front() != '/') target = parent_dir(path) + "/" + target;
  auto canonical = resolve_unplanted(target, roots);
  if (!canonical && canonical.error()->sys_errno == ENOENT) {
    // Missing: harmless where it would lie outside the roots (nothing can make it there).
    std::string existing = parent_dir(target);
    struct stat up {};
    while (existing != "/" && ::lstat(existing.c_str(), &up) < 0) existing = parent_dir(existing);
    auto above = resolve_unplanted(existing, roots);
    if (above && !inside_a_root(*above, roots)) return {};
  }
  if (!canonical) {
    return make_error(Code::BACKEND_FAILED, "protected path " + path + " links to " + target + ": " +
                                                canonical.error()->message,
                      {}, canonical.error()->sys_errno);
  }
  if (!inside_a_root(*canonical, roots)) return {};
  if (inside_or_at(parent_dir(path), *canonical)) {
    // Protecting the target would make read-only what holds the link (a whole root).
    return make_error(Code::BACKEND_FAILED, "protected path " + path + " links to " + *canonical +
                                                ", a directory that holds it: the session is refused",
                      {}, ELOOP);
  }
  targets.push_back(*canonical);
  return {};
}

}  // namespace

Status protect_link_targets(MountPlan& plan, const std::vector<std::string>& roots) {
  std::vector<std::string> walked;
  std::size_t seen = 0;
  for (bool grew = true; grew;) {
    grew = false;
    const std::vector<ProtectedMount> mounts = plan.mounts();
    for (const auto& m : mounts) {
      if (m.access != MountAccess::read_only ||
          std::find(walked.begin(), walked.end(), m.path) != walked.end()) {
        continue;
      }
      walked.push_back(m.path);
      std::vector<std::string> targets;
      struct stat st {};
      if (::lstat(m.path.c_str(), &st) < 0) return path_error("protected path " + m.path, errno);
      if (Status s = check_protected_entry(m.path, st, roots, targets); !s) return s;
      if (!S_ISDIR(st.st_mode)) continue;
      std::error_code ec;
      // Not following links to directories: each link is an entry of its own.
      std::filesystem::recursive_directory_iterator it(m.path, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        if (++seen > kMaxProtectedEntries) {
          return make_error(Code::BACKEND_FAILED, "protected paths hold more than " +
                                                      std::to_string(kMaxProtectedEntries) +
                                                      " entries: too many to check, so the session is refused",
                            {}, E2BIG);
        }
        const std::string path = it->path().string();
        if (::lstat(path.c_str(), &st) < 0) return path_error("protected path " + path, errno);
        if (Status s = check_protected_entry(path, st, roots, targets); !s) return s;
      }
      if (ec) return path_error("protected path " + m.path, ec.value());
      for (const auto& t : targets) {
        plan.add(t, MountAccess::read_only);
        grew = true;
      }
    }
  }
  return {};
}

Result<std::vector<ProtectedMount>> protected_mounts(const std::vector<std::string>& roots,
                                                     const std::vector<std::string>& entries) {
  MountPlan plan;
  auto protect = [&](const std::string& path) -> Status {
    if (base_of(path) == ".git") return protect_git(path, GitProtection::whole_read_only, roots, plan);
    auto canonical = protected_target(path, roots);
    if (!canonical) return canonical.error();
    if (*canonical && inside_a_root(**canonical, roots)) plan.add(**canonical, MountAccess::read_only);
    return {};
  };
  for (const auto& root : roots) {
    if (Status st = protect_git(root + "/.git", GitProtection::commits_allowed, roots, plan); !st) {
      return st.error();
    }
    if (Status st = protect_enclosing_repo(root, roots, plan); !st) return st.error();
  }
  for (const auto& entry : entries) {
    if (entry.empty()) continue;
    if (entry.front() == '/') {
      if (Status st = protect(entry); !st) return st.error();
      continue;
    }
    for (const auto& root : roots) {
      if (Status st = protect(root + "/" + entry); !st) return st.error();
    }
  }
  if (Status st = protect_link_targets(plan, roots); !st) return st.error();
  plan.pin_ancestors(roots);
  return plan.ordered();
}

namespace {

// Whether the session, running as this user without capabilities, may search `dir`: its mode
// bits for the owner, the group (ours or a supplementary one), or others; an ACL on it is
// taken as a yes (it may grant what the bits do not).
bool searchable(const std::string& dir, const std::vector<gid_t>& groups) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) < 0) return true;  // unknown: mask it
  if (::getxattr(dir.c_str(), "system.posix_acl_access", nullptr, 0) > 0) return true;
  if (st.st_uid == ::getuid()) return (st.st_mode & S_IXUSR) != 0;
  if (std::find(groups.begin(), groups.end(), st.st_gid) != groups.end()) return (st.st_mode & S_IXGRP) != 0;
  return (st.st_mode & S_IXOTH) != 0;
}

// A socket the session could never reach needs no mask, and bwrap could not make one there:
// its set-up cannot create the mount point under a directory whose owner its user namespace
// does not map. Without this, any user could keep every confined session from starting by
// binding a socket in a private directory.
bool reachable_from_session(const std::string& canonical, const std::vector<gid_t>& groups) {
  for (std::size_t slash = canonical.find('/', 1); slash != std::string::npos; slash = canonical.find('/', slash + 1)) {
    if (!searchable(canonical.substr(0, slash), groups)) return false;
  }
  return searchable("/", groups);
}

std::vector<gid_t> our_groups() {
  std::vector<gid_t> groups(static_cast<std::size_t>(std::max(0, ::getgroups(0, nullptr))) + 1);
  const int n = ::getgroups(static_cast<int>(groups.size() - 1), groups.data());
  groups.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  groups.push_back(::getgid());
  return groups;
}

}  // namespace

std::vector<std::string> visible_host_sockets(const std::vector<std::string>& hidden,
                                              const std::vector<std::string>& shown_again,
                                              const std::vector<std::string>& except) {
  // "Num RefCount Protocol Flags Type St Inode Path": the path is all after the seventh
  // field; '@' starts an abstract name (a network namespace's, not a file).
  std::vector<std::string> out;
  const std::vector<gid_t> groups = our_groups();
  std::ifstream in("/proc/net/unix");
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::size_t pos = 0;
    for (int field = 0; field < 7 && pos != std::string::npos; ++field) {
      pos = line.find_first_not_of(' ', pos);
      if (pos != std::string::npos) pos = line.find(' ', pos);
    }
    if (pos == std::string::npos) continue;
    std::string path = line.substr(line.find_first_not_of(' ', pos) == std::string::npos
                                       ? line.size()
                                       : line.find_first_not_of(' ', pos));
    if (path.empty() || path.front() != '/') continue;
    char real[PATH_MAX];
    if (!::realpath(path.c_str(), real)) continue;  // gone since it was bound
    struct stat st {};
    if (::lstat(real, &st) < 0 || !S_ISSOCK(st.st_mode)) continue;
    std::string canonical = real;
    auto under = [&](const std::vector<std::string>& dirs) {
      return std::any_of(dirs.begin(), dirs.end(), [&](const std::string& d) { return inside_or_at(canonical, d); });
    };
    bool skip = (under(hidden) && !under(shown_again)) ||
                std::find(except.begin(), except.end(), canonical) != except.end() ||
                !reachable_from_session(canonical, groups);
    if (!skip) add_unique(out, canonical);
  }
  return out;
}

}  // namespace dshpty::shell
