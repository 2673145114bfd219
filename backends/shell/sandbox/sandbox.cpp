#include "sandbox/sandbox.hpp"

#include <algorithm>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "sandbox/sandbox_paths.hpp"
#include "proc/procfs.hpp"

namespace dshpty::shell {

namespace {

std::string mode_words(SandboxMode mode) {
  return "sandbox " + std::string(sandbox_mode_name(mode));
}

Error sandbox_error(SandboxMode mode, const std::string& cause, int err = 0) {
  if (err != 0) return make_system_error(Code::BACKEND_FAILED, mode_words(mode) + ": " + cause, err);
  return make_error(Code::BACKEND_FAILED, mode_words(mode) + ": " + cause);
}

// `name` on the host's PATH (not the shell's: the host runs bwrap), else empty.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && dir.front() == '/') {
      std::string candidate = dir + "/" + name;
      struct stat st {};
      if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          ::access(candidate.c_str(), X_OK) == 0) {
        return candidate;
      }
    }
    start = end + 1;
  }
  return {};
}

// A small /proc/sys integer, or `missing` when the file does not exist.
long sysctl_value(const char* path, long missing) {
  char buf[32];
  if (procfs::read_small(path, buf, sizeof buf) <= 0) return missing;
  const char* p = buf;
  long value = missing;
  procfs::parse_decimal(p, value);
  return value;
}

// Without privilege (not root, bwrap not setuid) bwrap needs an unprivileged user
// namespace. The kernel's switches for it are cheap to read, so a refusal is named here
// rather than discovered from bwrap's exit; anything these miss (a seccomp filter, an
// LSM) still fails the start, with bwrap's own words (local/local_channel.cpp).
Status check_namespaces(SandboxMode mode, const std::string& bwrap) {
  struct stat st {};
  if (::geteuid() == 0 || (::stat(bwrap.c_str(), &st) == 0 && (st.st_mode & S_ISUID))) return {};
  if (sysctl_value("/proc/sys/user/max_user_namespaces", 1) == 0) {
    return sandbox_error(mode, "this kernel allows no user namespaces "
                               "(user.max_user_namespaces = 0)", EPERM);
  }
  if (sysctl_value("/proc/sys/kernel/unprivileged_userns_clone", 1) == 0) {
    return sandbox_error(mode, "this kernel refuses unprivileged user namespaces "
                               "(kernel.unprivileged_userns_clone = 0)", EPERM);
  }
  if (sysctl_value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", 0) == 1) {
    return sandbox_error(mode, "AppArmor restricts unprivileged user namespaces "
                               "(kernel.apparmor_restrict_unprivileged_userns = 1)", EPERM);
  }
  return {};
}

Result<std::string> writable_dir(SandboxMode mode, const std::string& what,
                                 const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) < 0) return sandbox_error(mode, what + " " + path, errno);
  if (!S_ISDIR(st.st_mode)) {
    return sandbox_error(mode, what + " " + path + " is not a directory", ENOTDIR);
  }
  // The bind's source and target are the canonical path: a symlinked cwd still lands on
  // the writable mount.
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved)) return sandbox_error(mode, what + " " + path, errno);
  return std::string(resolved);
}

// Under one of the directories the sandbox replaces (its private /tmp, the masks): a bind
// there must come after the replacement, or the replacement would cover it.
bool under_any(const std::string& path, const std::vector<std::string>& dirs) {
  return std::any_of(dirs.begin(), dirs.end(), [&](const std::string& d) { return inside_or_at(path, d); });
}

// The host's $XDG_RUNTIME_DIR and the one the session's env sets, if any: the host's stays
// on the file system whatever the session is told.
std::vector<std::string> runtime_dirs(const std::map<std::string, std::optional<std::string>>& env) {
  std::vector<std::string> dirs;
  if (const char* dir = std::getenv("XDG_RUNTIME_DIR"); dir && *dir) dirs.emplace_back(dir);
  if (auto it = env.find("XDG_RUNTIME_DIR"); it != env.end() && it->second) dirs.push_back(*it->second);
  return dirs;
}

// The directories masked by an empty tmpfs: where host services keep their rendezvous
// sockets (/run: D-Bus's system bus, docker.sock, databases; /var/run when it is not a link
// to /run; $XDG_RUNTIME_DIR: the session bus, ssh and gpg agents), and the recordings'
// directory: every owner's transcripts, input included, are files of the host's uid, which
// the session runs as. Canonical, existing, outermost first.
std::vector<std::string> dirs_to_mask(const std::map<std::string, std::optional<std::string>>& env,
                                      const std::string& record_dir) {
  std::vector<std::string> candidates = {"/run", "/var/run"};
  for (const auto& xdg : runtime_dirs(env)) {
    if (!xdg.empty() && xdg.front() == '/') candidates.push_back(xdg);
  }
  if (!record_dir.empty()) candidates.push_back(record_dir);
  std::vector<std::string> dirs;
  for (const auto& c : candidates) {
    char real[PATH_MAX];
    struct stat st {};
    if (!::realpath(c.c_str(), real) || ::stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) continue;
    std::string dir = real;
    if (dir == "/" || under_any(dir, dirs) || inside_or_at(dir, "/tmp")) continue;
    dirs.push_back(dir);
  }
  return dirs;
}

// The smaller of 1 GiB and a tenth of the host's RAM.
std::size_t default_tmpfs_bytes() {
  constexpr std::size_t kCap = std::size_t{1} << 30;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return kCap;
  return std::min(kCap, static_cast<std::size_t>(pages) / 10 * static_cast<std::size_t>(page));
}

// `path` made absolute against the host's cwd, with "." and ".." taken lexically and
// repeated slashes folded: what the caller named, before any link is followed.
std::string lexically_absolute(const std::string& path) {
  std::string whole = path;
  if (whole.empty() || whole.front() != '/') {
    char here[PATH_MAX];
    whole = std::string(::getcwd(here, sizeof here) ? here : "/") + "/" + whole;
  }
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= whole.size()) {
    std::size_t end = whole.find('/', start);
    if (end == std::string::npos) end = whole.size();
    std::string part = whole.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(std::move(part));
    }
    start = end + 1;
  }
  std::string out;
  for (const auto& part : parts) out += "/" + part;
  return out.empty() ? "/" : out;
}

std::string canonical_or_empty(const char* path) {
  char real[PATH_MAX];
  if (!path || !*path || !::realpath(path, real)) return {};
  return real;
}

// The operator's rules for a confined session's cwd (its writable root in
// workspace-write): not "/" nor the home directory, reached through no symbolic link (a
// link planted by an earlier session or shipped in a repository would choose the root),
// and inside one of the operator's workspaces when there are any.
Status check_confined_cwd(const std::string& cwd, const std::vector<std::string>& workspaces) {
  auto refuse = [&](const std::string& why) {
    return Status(make_error(Code::INVALID_ARGUMENT, "cwd " + cwd + ": " + why));
  };
  const std::string named = lexically_absolute(cwd);
  const std::string real = canonical_or_empty(named.c_str());
  if (real.empty()) return Status(make_system_error(Code::BACKEND_FAILED, "working directory " + cwd, errno));
  if (real != named) return refuse("a confined session's cwd may not be reached through a symbolic link (it leads to " + real + ")");
  if (real == "/") return refuse("a confined session's cwd may not be /");
  // Inside a git directory or a protected path, the cwd would be a writable root with none of
  // their protection over it (hooks, config, an editor's tasks run later on the host).
  for (std::string dir = real; dir != "/"; dir = dir.substr(0, std::max<std::size_t>(1, dir.rfind('/')))) {
    const std::string name = dir.substr(dir.rfind('/') + 1);
    const bool protected_name =
        name == ".git" || std::find(kDefaultProtectedPaths.begin(), kDefaultProtectedPaths.end(), name) !=
                              kDefaultProtectedPaths.end();
    struct stat head {}, objects {}, refs {};
    const bool git_dir = ::stat((dir + "/HEAD").c_str(), &head) == 0 && S_ISREG(head.st_mode) &&
                         ::stat((dir + "/objects").c_str(), &objects) == 0 && S_ISDIR(objects.st_mode) &&
                         ::stat((dir + "/refs").c_str(), &refs) == 0 && S_ISDIR(refs.st_mode);
    if (protected_name || git_dir) {
      return refuse("a confined session's cwd may not be inside a git directory or a protected path (" + dir + ")");
    }
  }
  if (const std::string home = canonical_or_empty(std::getenv("HOME")); !home.empty() && real == home) {
    return refuse("a confined session's cwd may not be the home directory");
  }
  if (workspaces.empty()) return {};
  std::string roots;
  for (const auto& ws : workspaces) {
    const std::string root = canonical_or_empty(ws.c_str());
    if (!root.empty() && inside_or_at(real, root)) return {};
    roots += (roots.empty() ? "" : ", ") + ws;
  }
  return refuse("outside the operator's workspaces (" + roots + ")");
}

// The defaults, less those `configured` names with "!", then the rest of `configured`.
// `.git` needs no entry (it is always protected, commits allowed); naming it makes the
// whole of it read-only.
Result<std::vector<std::string>> protected_entries(const std::vector<std::string>& configured) {
  std::vector<std::string> entries = kDefaultProtectedPaths;
  std::vector<std::string> added;
  for (const auto& entry : configured) {
    if (entry.empty() || entry.front() != '!') {
      added.push_back(entry);
      continue;
    }
    auto it = std::find(entries.begin(), entries.end(), entry.substr(1));
    if (it == entries.end()) {
      std::string known;
      for (const auto& d : kDefaultProtectedPaths) known += (known.empty() ? "" : ", ") + d;
      return make_error(Code::INVALID_ARGUMENT,
                        "protected path \"" + entry + "\" leaves out no default (defaults: " + known +
                            "; .git is always protected)");
    }
    entries.erase(it);
  }
  entries.insert(entries.end(), added.begin(), added.end());
  return entries;
}

}  // namespace

// Each names what a tool on the host runs later from the workspace: git hooks through husky
// and pre-commit, direnv, editors' tasks, agents' hooks and MCP servers, a dev container's
// commands, yarn's and pnpm's hooks, mise's tasks.
const std::vector<std::string> kDefaultProtectedPaths = {
    ".husky",  ".pre-commit-config.yaml", ".envrc",         ".vscode",     ".idea",       ".claude",
    ".cursor", ".gemini",                 ".mcp.json",      ".devcontainer", ".yarnrc.yml", ".pnpmfile.cjs",
    "mise.toml", ".mise.toml"};

std::string_view sandbox_mode_name(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::none:
      return "none";
    case SandboxMode::read_only:
      return "read-only";
    case SandboxMode::workspace_write:
      return "workspace-write";
  }
  return "?";
}

int strictness(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::none:
      return 0;
    case SandboxMode::workspace_write:
      return 1;
    case SandboxMode::read_only:
      return 2;
  }
  return 0;
}

std::string modes_from(SandboxMode floor) {
  std::string out;
  for (SandboxMode m : kSandboxModes) {
    if (strictness(m) < strictness(floor)) continue;
    if (!out.empty()) out += ", ";
    out += sandbox_mode_name(m);
  }
  return out;
}

std::optional<Confinement> describe_confinement(const SandboxSpec& spec) {
  if (!spec.confined()) return std::nullopt;
  Confinement c;
  c.mode = std::string(sandbox_mode_name(spec.mode));
  c.network = spec.network;
  if (spec.workspace) c.writable_roots.push_back(*spec.workspace);
  c.writable_roots.insert(c.writable_roots.end(), spec.writable_roots.begin(), spec.writable_roots.end());
  for (const auto& mount : spec.protected_mounts) {
    if (mount.access == MountAccess::read_only) c.protected_paths.push_back(mount.path);
  }
  return c;
}

Result<SandboxSpec> parse_sandbox_options(const std::map<std::string, std::string>& options,
                                          const ShellConfig& config) {
  SandboxSpec spec;
  // A default below the floor is raised to it: the floor is the operator's last word.
  spec.mode = strictness(config.sandbox) < strictness(config.sandbox_floor) ? config.sandbox_floor : config.sandbox;
  if (auto it = options.find("sandbox"); it != options.end()) {
    bool known = false;
    for (SandboxMode m : kSandboxModes) {
      if (it->second == sandbox_mode_name(m)) {
        spec.mode = m;
        known = true;
      }
    }
    if (!known) {
      return make_error(Code::INVALID_ARGUMENT, "unknown sandbox mode \"" + it->second +
                                                    "\" (known: none, read-only, workspace-write)");
    }
    if (strictness(spec.mode) < strictness(config.sandbox_floor)) {
      return make_error(Code::INVALID_ARGUMENT,
                        "sandbox \"" + it->second + "\" is below the operator's floor, " +
                            std::string(sandbox_mode_name(config.sandbox_floor)) +
                            " (allowed: " + modes_from(config.sandbox_floor) + ")");
    }
  }
  spec.network = spec.confined() ? config.sandbox_network && !config.network_floor : true;
  if (auto it = options.find("network"); it != options.end()) {
    if (it->second != "on" && it->second != "off") {
      return make_error(Code::INVALID_ARGUMENT,
                        "shell option \"network\" must be on or off, got \"" + it->second + "\"");
    }
    spec.network = it->second == "on";
    if (!spec.network && !spec.confined()) {
      return make_error(Code::INVALID_ARGUMENT,
                        "network=off needs a confined session (sandbox read-only or "
                        "workspace-write); sandbox none has the host's network");
    }
  }
  if (spec.network && config.network_floor) {
    return make_error(Code::INVALID_ARGUMENT,
                      spec.confined() ? std::string("network \"on\" is below the operator's floor: the network is off")
                                      : std::string("sandbox none has the host's network, below the operator's "
                                                    "floor (network off): choose read-only or workspace-write"));
  }
  if (spec.mode == SandboxMode::workspace_write) {
    auto entries = protected_entries(config.protected_paths);
    if (!entries) return entries.error();
    spec.writable_roots = config.writable_roots;
    spec.protected_entries = std::move(*entries);
  }
  spec.allow_sockets = config.allow_sockets;
  spec.workspaces = config.workspaces;
  spec.env = config.env;
  spec.record_dir = config.record_dir;
  spec.tmpfs_bytes = config.sandbox_tmpfs_bytes > 0 ? config.sandbox_tmpfs_bytes : default_tmpfs_bytes();
  return spec;
}

Status check_sandbox(SandboxSpec& spec, const std::optional<std::string>& cwd,
                     const std::string& configured_bwrap, const std::string& supervisor_path) {
  if (!spec.confined()) return {};
  if (!configured_bwrap.empty()) {
    struct stat st {};
    if (::stat(configured_bwrap.c_str(), &st) < 0) {
      return sandbox_error(spec.mode, "bubblewrap " + configured_bwrap, errno);
    }
    if (!S_ISREG(st.st_mode) || ::access(configured_bwrap.c_str(), X_OK) < 0) {
      return sandbox_error(spec.mode, "bubblewrap " + configured_bwrap + " is not executable", EACCES);
    }
    spec.bwrap = configured_bwrap;
  } else {
    spec.bwrap = find_on_path("bwrap");
    if (spec.bwrap.empty()) {
      return sandbox_error(spec.mode, "bubblewrap (bwrap) is not installed or not on PATH "
                                      "(Debian: apt-get install bubblewrap)", ENOENT);
    }
  }
  {
    char here[PATH_MAX];
    const std::string effective = cwd ? *cwd : (::getcwd(here, sizeof here) ? here : "/");
    if (Status st = check_confined_cwd(effective, spec.workspaces); !st) return st;
  }
  if (Status st = check_namespaces(spec.mode, spec.bwrap); !st) return st;
  struct stat bwrap_st {};
  spec.bwrap_setuid = ::stat(spec.bwrap.c_str(), &bwrap_st) == 0 && (bwrap_st.st_mode & S_ISUID);
  if (spec.bwrap_setuid) spec.tmpfs_bytes = 0;  // a setuid bwrap refuses --size
  if (spec.mode == SandboxMode::workspace_write) {
    if (!cwd) {
      return sandbox_error(spec.mode, "needs a working directory (the workspace): the spawn "
                                      "and the backend config have none", EINVAL);
    }
    auto ws = writable_dir(spec.mode, "workspace", *cwd);
    if (!ws) return ws.error();
    std::vector<std::string> given = {*cwd};
    std::vector<std::string> canonical = {*ws};
    for (const std::string& root : spec.writable_roots) {
      auto dir = writable_dir(spec.mode, "writable root", root);
      if (!dir) return dir.error();
      given.push_back(root);
      canonical.push_back(*dir);
    }
    // A root reached through a link that lies inside another root: an earlier session may
    // have put it there to have this one bind a directory of its choosing writable.
    for (const auto& path : given) {
      auto checked = resolve_unplanted(path, canonical);
      if (!checked) return sandbox_error(spec.mode, checked.error()->message, checked.error()->sys_errno);
    }
    spec.workspace = canonical.front();
    spec.writable_roots.assign(canonical.begin() + 1, canonical.end());
    auto mounts = protected_mounts(canonical, spec.protected_entries);
    if (!mounts) return sandbox_error(spec.mode, mounts.error()->message, mounts.error()->sys_errno);
    spec.protected_mounts = std::move(*mounts);
  }
  std::vector<std::string> writable;
  if (spec.workspace) writable.push_back(*spec.workspace);
  writable.insert(writable.end(), spec.writable_roots.begin(), spec.writable_roots.end());
  spec.masked_dirs = dirs_to_mask(spec.env, spec.record_dir);
  // The mask is undone by a bind at or below it: a cwd or writable root there would show
  // (and in workspace-write, open to writing) every owner's recordings.
  if (const std::string rec = canonical_or_empty(spec.record_dir.c_str()); !rec.empty()) {
    std::vector<std::string> shown = writable;
    if (cwd) shown.push_back(canonical_or_empty(lexically_absolute(*cwd).c_str()));
    for (const auto& dir : shown) {
      if (!dir.empty() && inside_or_at(dir, rec)) {
        return make_error(Code::INVALID_ARGUMENT, "a confined session's cwd or writable root may not be in "
                                                  "the recordings' directory " + rec + " (" + dir + ")");
      }
    }
  }
  spec.allowed_sockets.clear();
  for (const auto& path : spec.allow_sockets) {
    auto canonical = resolve_unplanted(path, writable);
    if (!canonical) {
      return sandbox_error(spec.mode, "allowed socket: " + canonical.error()->message,
                           canonical.error()->sys_errno);
    }
    struct stat st {};
    if (::stat(canonical->c_str(), &st) < 0 || !S_ISSOCK(st.st_mode)) {
      return sandbox_error(spec.mode, "allowed socket " + path + " is not a unix socket", ENOTSOCK);
    }
    if (std::find(spec.allowed_sockets.begin(), spec.allowed_sockets.end(), *canonical) ==
        spec.allowed_sockets.end()) {
      spec.allowed_sockets.push_back(*canonical);
    }
  }
  std::vector<std::string> hidden = {"/tmp", "/dev", "/proc"};
  hidden.insert(hidden.end(), spec.masked_dirs.begin(), spec.masked_dirs.end());
  std::vector<std::string> shown_again = writable;
  if (cwd) shown_again.push_back(*cwd);
  spec.socket_masks = std::make_shared<SocketMasks>(std::move(hidden), std::move(shown_again),
                                                    spec.allowed_sockets, writable);
  if (supervisor_path.empty() || supervisor_path.front() != '/') {
    return sandbox_error(spec.mode, "the PTY supervisor " + supervisor_path + " must be an absolute path", EINVAL);
  }
  return {};
}

LaunchPlan wrap_in_bwrap(const LaunchPlan& direct, const SandboxSpec& spec,
                         const std::optional<std::string>& cwd) {
  LaunchPlan plan;
  plan.program = spec.bwrap;
  plan.env = direct.env;
  plan.tty_by_message = true;
  plan.pid_namespace = true;
  plan.wrapper_label = mode_words(spec.mode) + " (" + spec.bwrap + ")";
  plan.seccomp_program = spec.seccomp_program;
  plan.helper_path = direct.helper_path;
  auto& a = plan.argv;
  a = {"bwrap"};
  // A user namespace of its own, explicitly (bwrap makes one unasked only when not run by
  // root), so that --disable-userns can shut nested ones: the filter refuses unshare and
  // clone(CLONE_NEWUSER) too, this is the kernel's own word on it. A setuid bwrap refuses
  // both; the filter alone holds then.
  if (!spec.bwrap_setuid) a.insert(a.end(), {"--unshare-user", "--disable-userns"});
  // --as-pid-1: the supervisor itself is the namespace's init. Without it bwrap puts a
  // reaper of its own there, and the outer bwrap exits as soon as that reaper *reports*
  // the command's exit, before the reaper is gone: measured here, a bwrap process still
  // ran after the helper's pidfd said it exited. With it, the outer bwrap reaps the
  // supervisor, whose death as init has the kernel kill and reap every process left in the
  // namespace first: the helper's pidfd turning readable proves the namespace empty.
  // --new-session: no TIOCSTI into a terminal outside (the session's own PTY takes over in
  // the supervisor); --die-with-parent: the host's death SIGKILLs the supervisor, and with
  // it, by the kernel, every process in the namespace. --unshare-ipc: the host's System V
  // and POSIX message queues, semaphores and shared memory are rendezvous too.
  a.insert(a.end(), {"--unshare-pid", "--unshare-ipc", "--as-pid-1"});
  if (spec.host_death_kills) a.push_back("--die-with-parent");
  a.insert(a.end(), {"--new-session", "--ro-bind", "/", "/"});
  // No capabilities inside, whoever the host is: bwrap run by root otherwise keeps them all
  // in the session's user namespace (which maps uid 0 to the host's root).
  a.insert(a.end(), {"--cap-drop", "ALL"});
  std::vector<std::string> roots;
  if (spec.workspace) roots.push_back(*spec.workspace);
  roots.insert(roots.end(), spec.writable_roots.begin(), spec.writable_roots.end());
  // bwrap mounts in argument order: a root under /tmp or a masked directory must come after
  // the private /tmp and the masks, any other before /dev and /proc (so a root above them
  // cannot cover them).
  std::vector<std::string> replaced = {"/tmp"};
  replaced.insert(replaced.end(), spec.masked_dirs.begin(), spec.masked_dirs.end());
  for (const auto& root : roots) {
    if (!under_any(root, replaced)) a.insert(a.end(), {"--bind", root, root});
  }
  a.insert(a.end(), {"--dev", "/dev", "--proc", "/proc"});
  // bwrap covers /proc's host-wide knobs read-only only where access(W_OK) says they are
  // writable, and the kernel refuses W_OK on a directory of /proc/sys whoever asks, so it
  // never covers /proc/sys, /proc/irq or /proc/bus: uid 0 inside is the host's root to
  // their files' permission checks (kernel.hostname, kernel.core_pattern: a handler run as
  // root outside every namespace). Bound read-only here, unconditionally, with the other
  // host-wide files a root-owned mode lets uid 0 open for writing (/proc/pressure's are
  // everyone's by design); the private network namespace's /proc/sys/net still reads as
  // the session's own. `-try`: a kernel without one of them has nothing to cover.
  for (const char* knob : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/mtrr",
                           "/proc/acpi", "/proc/scsi", "/proc/driver", "/proc/fs", "/proc/tty"}) {
    a.insert(a.end(), {"--ro-bind-try", knob, knob});
  }
  // Each tmpfs the session can fill is sized (bwrap's own default is half the host's RAM,
  // each): /tmp, the masks, and /dev/shm; /dev itself is made read-only below.
  const auto sized_tmpfs = [&](const std::string& dir, const char* perms) {
    if (perms) a.insert(a.end(), {"--perms", perms});
    if (spec.tmpfs_bytes > 0) a.insert(a.end(), {"--size", std::to_string(spec.tmpfs_bytes)});
    a.insert(a.end(), {"--tmpfs", dir});
  };
  sized_tmpfs("/tmp", "1777");
  sized_tmpfs("/dev/shm", "1777");
  for (const auto& dir : spec.masked_dirs) sized_tmpfs(dir, nullptr);
  // bwrap binds its own inherited terminal as /dev/console; ours is not inherited (it goes
  // over the socket), so the slave is named here: the slave's path is filled in once the
  // PTY exists (LaunchPlan::tty_path_arg). Then `tty` says /dev/console, as under bwrap.
  a.insert(a.end(), {"--dev-bind", "", "/dev/console"});
  plan.tty_path_arg = static_cast<int>(a.size()) - 2;
  // /dev's own tmpfs (unsized, bwrap makes it) read-only now that its nodes exist: the
  // device nodes, /dev/pts and /dev/shm are mounts of their own and keep working.
  a.insert(a.end(), {"--remount-ro", "/dev"});
  for (const auto& root : roots) {
    if (under_any(root, replaced)) a.insert(a.end(), {"--bind", root, root});
  }
  // A helper under /tmp or a mask (a build tree there, as a CI clone may be) would be
  // hidden: it alone is bound back, read-only.
  if (under_any(direct.program, replaced)) a.insert(a.end(), {"--ro-bind", direct.program, direct.program});
  // So is a working directory there that is no writable root (read-only mode): the session
  // starts where it was asked to, and may read it, as it may read the rest of the host.
  if (cwd && under_any(*cwd, replaced) && std::find(roots.begin(), roots.end(), *cwd) == roots.end()) {
    a.insert(a.end(), {"--ro-bind", *cwd, *cwd});
  }
  // Over the writable roots, outer first: `.git` (and each parent of a protected path)
  // bound writable onto itself, read-only over it its config and hooks and the other
  // protected paths; then the host's sockets covered (a char device: connect() says
  // ECONNREFUSED), those inside a protected directory included, then the sockets passed
  // in on purpose.
  for (const auto& m : spec.protected_mounts) {
    a.insert(a.end(), {m.access == MountAccess::writable ? "--bind" : "--ro-bind", m.path, m.path});
  }
  // The sockets are listed when bwrap is about to start (sandbox/socket_masks.hpp), each
  // time it starts: here is only where their mounts go.
  plan.late_mounts = spec.socket_masks;
  plan.late_mounts_at = a.size();
  for (const auto& sock : spec.allowed_sockets) a.insert(a.end(), {"--bind", sock, sock});
  if (!spec.network) a.push_back("--unshare-net");
  if (cwd) a.insert(a.end(), {"--chdir", *cwd});
  if (spec.seccomp_program) a.insert(a.end(), {"--seccomp", std::to_string(kSeccompFd)});
  a.push_back("--");
  // The helper by path (bwrap execs argv[0] of its command), then its own arguments.
  a.push_back(direct.program);
  a.push_back("--tty-from-socket");
  // Landlock's scoping, where the kernel has it: the host's abstract unix sockets stay
  // out of reach with the network on too (supervisor/landlock_scope.hpp).
  a.push_back("--scope-abstract-sockets");
  a.insert(a.end(), direct.argv.begin() + 1, direct.argv.end());
  return plan;
}

}  // namespace dshpty::shell
