#include "sandbox/sandbox_git.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

namespace dshpty::shell {

namespace {

constexpr int kMaxIncludeDepth = 10;             // git's own limit
constexpr std::size_t kMaxConfigBytes = 1 << 20;  // more than any real config

// A regular file's first `max` bytes, else empty. Never blocks: a session may have put a
// FIFO where git reads a file (`mkfifo .git/commondir`), and the host's loop must not wait.
std::string read_regular(const std::string& path, std::size_t max) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    max = std::min(max, static_cast<std::size_t>(st.st_size));
    text.resize(max);
    std::size_t got = 0;
    while (got < max) {
      ssize_t n = ::read(fd, text.data() + got, max - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  return text;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string base_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string home_dir() {
  const char* home = std::getenv("HOME");
  return home && *home ? home : "";
}

// A path as git reads it from config: `~/` and `~user/` expanded, else relative to `base`.
// Empty when it cannot be placed (no home; git's runtime `%(prefix)/`, which is the host's).
std::string config_path(const std::string& value, const std::string& base) {
  if (value.empty() || value.rfind("%(prefix)/", 0) == 0) return {};
  if (value.front() == '/') return value;
  if (value.front() != '~') return base + "/" + value;
  auto slash = value.find('/');
  std::string user = value.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
  std::string rest = slash == std::string::npos ? "" : value.substr(slash);
  if (user.empty()) {
    std::string home = home_dir();
    return home.empty() ? "" : home + rest;
  }
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (::getpwnam_r(user.c_str(), &pw, buf, sizeof buf, &found) != 0 || !found) return {};
  return std::string(found->pw_dir) + rest;
}

std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// One `section.key = value` of a config file (section and key lowered; a subsection, which
// git keeps case-sensitive, is not needed here).
struct ConfigEntry {
  std::string section;
  std::string key;
  std::string value;
  bool has_value = false;
};

// git's config syntax, as far as it decides which keys are set: comments, `[section]`,
// `[section "sub"]`, `[section.sub]`, a key on the header's line, quoted values, escapes and
// continued lines. What git would reject is skipped to the end of its line.
std::vector<ConfigEntry> parse_config(const std::string& text) {
  std::vector<ConfigEntry> out;
  std::string section;
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto skip_line = [&] {
    while (i < n && text[i] != '\n') ++i;
  };
  while (i < n) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++i;
    } else if (c == '#' || c == ';') {
      skip_line();
    } else if (c == '[') {
      std::size_t close = text.find(']', i);
      std::size_t eol = text.find('\n', i);
      if (close == std::string::npos || (eol != std::string::npos && eol < close)) {
        section.clear();
        skip_line();
        continue;
      }
      std::string header = text.substr(i + 1, close - i - 1);
      std::size_t end = header.find_first_of(" \t\".");
      section = lower(header.substr(0, end));
      i = close + 1;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      ConfigEntry e;
      e.section = section;
      while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '-')) e.key += text[i++];
      e.key = lower(e.key);
      while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i;
      if (i < n && text[i] == '=') {
        ++i;
        e.has_value = true;
        while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i;
        bool quoted = false;
        std::string pending;  // blanks kept only when more of the value follows
        while (i < n) {
          char v = text[i];
          if (v == '\n' && !quoted) break;
          ++i;
          if (v == '\\' && i < n) {
            char x = text[i++];
            if (x == '\n') continue;
            if (x == '\r' && i < n && text[i] == '\n') {
              ++i;
              continue;
            }
            e.value += pending;
            pending.clear();
            e.value += x == 'n' ? '\n' : x == 't' ? '\t' : x == 'b' ? '\b' : x;
          } else if (v == '"') {
            quoted = !quoted;
          } else if (!quoted && (v == '#' || v == ';')) {
            skip_line();
            break;
          } else if (!quoted && (v == ' ' || v == '\t' || v == '\r')) {
            pending += v;
          } else {
            e.value += pending;
            pending.clear();
            e.value += v;
          }
        }
      }
      out.push_back(std::move(e));
    } else {
      skip_line();
    }
  }
  return out;
}

bool config_true(const ConfigEntry& e) {
  if (!e.has_value) return true;
  std::string v = lower(e.value);
  if (v == "true" || v == "yes" || v == "on") return true;
  char* end = nullptr;
  long number = std::strtol(v.c_str(), &end, 10);
  return !v.empty() && end && *end == '\0' && number != 0;
}

void read_config_file(const std::string& file, int depth, std::set<std::string>& seen, GitConfigRefs& refs) {
  if (depth > kMaxIncludeDepth || !seen.insert(file).second) return;
  const std::string text = read_regular(file, kMaxConfigBytes);
  const std::string dir = parent_dir(file);
  for (const auto& e : parse_config(text)) {
    if ((e.section == "include" || e.section == "includeif") && e.key == "path" && e.has_value) {
      std::string path = config_path(e.value, dir);
      if (path.empty()) continue;
      refs.includes.push_back(path);
      read_config_file(path, depth + 1, seen, refs);
    } else if (e.section == "core" && e.key == "hookspath" && e.has_value && !e.value.empty()) {
      refs.hooks_paths.push_back(e.value);
    } else if (e.section == "extensions" && e.key == "worktreeconfig") {
      refs.worktree_config = config_true(e);
    }
  }
}

// The first line of a small file, trimmed, after `prefix` (empty `prefix`: the line).
std::string first_line_after(const std::string& file, const std::string& prefix) {
  std::string line = read_regular(file, 4096);
  line = line.substr(0, line.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  if (line.rfind(prefix, 0) != 0) return {};
  line.erase(0, prefix.size());
  while (!line.empty() && line.front() == ' ') line.erase(0, 1);
  return line;
}

// `target` as written in a git pointer file, relative to `dir` unless absolute.
std::string relative_to(const std::string& dir, const std::string& target) {
  return !target.empty() && target.front() == '/' ? target : dir + "/" + target;
}

enum class Make { directory, empty_file, nothing };

// `path` canonical, made first (with its missing parents) as `make` says when it is missing
// and would lie in a root: git reads it there once it exists, so it must exist to be bound
// read-only. std::nullopt: missing and left so (outside the roots a session cannot make it
// either, or `make` is nothing). A link planted inside a root on the way: BACKEND_FAILED.
Result<std::optional<std::string>> existing_or_made(const std::string& path, Make make,
                                                     const std::vector<std::string>& roots) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    auto canonical = resolve_unplanted(path, roots);
    if (!canonical) return canonical.error();
    return std::optional<std::string>(*canonical);
  }
  if (errno != ENOENT) return make_system_error(Code::BACKEND_FAILED, "protected path " + path, errno);
  if (make == Make::nothing) return std::optional<std::string>();
  const std::string parent = parent_dir(path);
  const std::string name = base_name(path);
  if (parent == path) return std::optional<std::string>();
  auto made_parent = existing_or_made(parent, Make::directory, roots);
  if (!made_parent) return made_parent.error();
  if (!*made_parent || !inside_a_root(**made_parent, roots)) return std::optional<std::string>();
  if (name.empty() || name == "." || name == "..") {
    return make_error(Code::BACKEND_FAILED, "protected path " + path + " cannot be made to protect it", {}, EINVAL);
  }
  const std::string target = (**made_parent == "/" ? "" : **made_parent) + "/" + name;
  int rc = 0;
  if (make == Make::directory) {
    rc = ::mkdir(target.c_str(), 0755);
  } else {
    int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
    rc = fd < 0 ? -1 : 0;
  }
  if (rc < 0 && errno != EEXIST) {
    return make_system_error(Code::BACKEND_FAILED, "cannot make " + target + " to protect it", errno);
  }
  auto canonical = resolve_unplanted(target, roots);
  if (!canonical) return canonical.error();
  return std::optional<std::string>(*canonical);
}

Status protect_part(const std::string& path, Make make, const std::vector<std::string>& roots, MountPlan& plan) {
  auto part = existing_or_made(path, make, roots);
  if (!part) return part.error();
  if (*part && inside_a_root(**part, roots)) plan.add(**part, MountAccess::read_only);
  return {};
}

// A linked worktree's own git directory (`dir`, canonical, in a root): HEAD, the index and
// logs writable; what points git elsewhere read-only. git reads no config or hooks here,
// but `commondir` names where it does, and `config.worktree` is config.
Status protect_linked_dir(const std::string& dir, bool worktree_config, const std::vector<std::string>& roots,
                          MountPlan& plan) {
  plan.add(dir, MountAccess::writable);
  for (auto [name, make] : {std::pair{"commondir", Make::nothing}, {"gitdir", Make::nothing},
                            {"config.worktree", worktree_config ? Make::empty_file : Make::nothing}}) {
    if (Status st = protect_part(dir + "/" + name, make, roots, plan); !st) return st;
  }
  return {};
}

// A repository's git directory (`gitdir`, canonical, in a root; no linked worktree's):
// writable, a mount point, with the parts that decide what git runs read-only over it.
// `worktrees`: the working trees a relative core.hooksPath is taken in.
Status protect_git_dir(const std::string& gitdir, const std::vector<std::string>& worktrees,
                       const std::vector<std::string>& roots, MountPlan& plan) {
  plan.add(gitdir, MountAccess::writable);
  for (auto [name, make] : {std::pair{"config", Make::empty_file}, {"hooks", Make::directory},
                            {"info", Make::directory}}) {
    if (Status st = protect_part(gitdir + "/" + name, make, roots, plan); !st) return st;
  }
  std::vector<std::string> files = host_git_config_files();
  files.push_back(gitdir + "/config");
  GitConfigRefs refs = read_git_config(files);
  // The host's own files, where a root holds them (a home directory as a root).
  for (const auto& file : files) {
    if (Status st = protect_part(file, Make::nothing, roots, plan); !st) return st;
  }
  if (Status st = protect_part(gitdir + "/config.worktree", refs.worktree_config ? Make::empty_file : Make::nothing,
                               roots, plan);
      !st) {
    return st;
  }
  for (const auto& include : refs.includes) {
    if (Status st = protect_part(include, Make::empty_file, roots, plan); !st) return st;
  }
  for (const auto& value : refs.hooks_paths) {
    for (const auto& worktree : worktrees) {
      std::string dir = config_path(value, worktree);
      if (dir.empty()) continue;
      if (Status st = protect_part(without_trailing_slashes(dir), Make::directory, roots, plan); !st) return st;
    }
  }
  // The linked worktrees' own directories, each as above (a new one the session makes is
  // no host worktree's: their `.git` files name the existing ones).
  const std::string linked = gitdir + "/worktrees";
  auto listed = protected_target(linked, roots);
  if (!listed) return listed.error();
  if (!*listed) return {};
  std::error_code ec;
  for (std::filesystem::directory_iterator it(**listed, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    const std::string child = it->path().string();
    if (::lstat(child.c_str(), &st) < 0 || !S_ISDIR(st.st_mode)) continue;
    if (Status s = protect_linked_dir(child, refs.worktree_config, roots, plan); !s) return s;
  }
  if (ec) return make_system_error(Code::BACKEND_FAILED, "protected path " + linked, ec.value());
  return {};
}

}  // namespace

GitConfigRefs read_git_config(const std::vector<std::string>& files) {
  GitConfigRefs refs;
  std::set<std::string> seen;
  for (const auto& file : files) read_config_file(file, 0, seen, refs);
  return refs;
}

std::vector<std::string> host_git_config_files() {
  std::vector<std::string> files;
  if (!std::getenv("GIT_CONFIG_NOSYSTEM")) {
    const char* system = std::getenv("GIT_CONFIG_SYSTEM");
    files.emplace_back(system && *system ? system : "/etc/gitconfig");
  }
  if (const char* global = std::getenv("GIT_CONFIG_GLOBAL"); global && *global) {
    files.emplace_back(global);
    return files;
  }
  const std::string home = home_dir();
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) {
    files.push_back(std::string(xdg) + "/git/config");
  } else if (!home.empty()) {
    files.push_back(home + "/.config/git/config");
  }
  if (!home.empty()) files.push_back(home + "/.gitconfig");
  return files;
}

Status protect_git(const std::string& dot_git, GitProtection how,
                   const std::vector<std::string>& roots, MountPlan& plan) {
  auto target = protected_target(dot_git, roots);
  if (!target) return target.error();
  if (!*target) return {};
  const std::string canonical = **target;
  struct stat st {};
  if (::stat(canonical.c_str(), &st) < 0) return {};
  if (S_ISDIR(st.st_mode)) {
    if (!inside_a_root(canonical, roots)) return {};  // read-only already
    // git reads config, hooks and objects from the directory a `commondir` names; in a
    // `.git` directory only an earlier session is likely to have put one (a session can,
    // docs/security.md, "Limits"): said, and refused, rather than protected in the wrong place.
    struct stat common {};
    if (::lstat((canonical + "/commondir").c_str(), &common) == 0) {
      return make_error(Code::BACKEND_FAILED,
                        canonical + "/commondir exists: git takes config and hooks from the directory "
                                    "it names (an earlier session may have made it); remove it to "
                                    "start a session here",
                        {}, EEXIST);
    }
    if (how == GitProtection::whole_read_only) {
      plan.add(canonical, MountAccess::read_only);
      return {};
    }
    return protect_git_dir(canonical, {parent_dir(canonical)}, roots, plan);
  }
  if (!S_ISREG(st.st_mode)) return {};
  // A worktree's, submodule's or --separate-git-dir's `.git` file: "gitdir: DIR". The
  // pointer itself stays as it is; DIR is protected where it lies in a root.
  if (inside_a_root(canonical, roots)) plan.add(canonical, MountAccess::read_only);
  std::string gitdir = first_line_after(canonical, "gitdir:");
  if (gitdir.empty()) return {};
  char real[PATH_MAX];
  if (!::realpath(relative_to(parent_dir(canonical), gitdir).c_str(), real)) return {};
  const std::string dir = real;
  if (!inside_a_root(dir, roots)) return {};
  // A linked worktree's: "commondir" names the repository's shared directory (config,
  // hooks, objects, refs), which is protected as any git directory where a root holds it.
  std::string common = first_line_after(dir + "/commondir", "");
  struct stat back {};
  if (!common.empty() && ::lstat((dir + "/gitdir").c_str(), &back) < 0) {
    // No linked worktree's (git writes `gitdir` beside its `commondir`): a session's.
    return make_error(Code::BACKEND_FAILED,
                      dir + "/commondir exists in no linked worktree's git directory: git takes config "
                            "and hooks from the directory it names (an earlier session may have made "
                            "it); remove it to start a session here",
                      {}, EEXIST);
  }
  if (!common.empty()) {
    std::string shared = ::realpath(relative_to(dir, common).c_str(), real) ? real : "";
    bool shared_in_root = !shared.empty() && inside_a_root(shared, roots);
    if (how == GitProtection::whole_read_only) {
      plan.add(dir, MountAccess::read_only);
      if (shared_in_root) plan.add(shared, MountAccess::read_only);
      return {};
    }
    const bool worktree_config = !shared.empty() && read_git_config({shared + "/config"}).worktree_config;
    if (!shared_in_root) return protect_linked_dir(dir, worktree_config, roots, plan);
    std::vector<std::string> worktrees = {parent_dir(canonical)};
    if (base_name(shared) == ".git") worktrees.push_back(parent_dir(shared));
    if (Status st = protect_git_dir(shared, worktrees, roots, plan); !st) return st;
    return protect_linked_dir(dir, worktree_config, roots, plan);
  }
  if (how == GitProtection::whole_read_only) {
    plan.add(dir, MountAccess::read_only);
    return {};
  }
  return protect_git_dir(dir, {parent_dir(canonical)}, roots, plan);
}

Status protect_enclosing_repo(const std::string& root, const std::vector<std::string>& roots, MountPlan& plan) {
  // The nearest `.git` above the root (none at the root itself: protect_git has that one).
  std::string top = parent_dir(root);
  for (;;) {
    struct stat st {};
    const std::string dot_git = (top == "/" ? "" : top) + "/.git";
    if (::stat(dot_git.c_str(), &st) == 0) {
      std::string gitdir = dot_git;
      if (S_ISREG(st.st_mode)) {
        const std::string named = first_line_after(dot_git, "gitdir:");
        char real[PATH_MAX];
        if (named.empty() || !::realpath(relative_to(top, named).c_str(), real)) return {};
        gitdir = real;
      }
      std::vector<std::string> files = host_git_config_files();
      files.push_back(gitdir + "/config");
      const std::string common = first_line_after(gitdir + "/commondir", "");
      char real[PATH_MAX];
      if (!common.empty() && ::realpath(relative_to(gitdir, common).c_str(), real)) files.push_back(std::string(real) + "/config");
      GitConfigRefs refs = read_git_config(files);
      for (const auto& include : refs.includes) {
        if (Status st2 = protect_part(include, Make::empty_file, roots, plan); !st2) return st2;
      }
      for (const auto& value : refs.hooks_paths) {
        std::string dir = config_path(value, top);
        if (dir.empty()) continue;
        if (Status st2 = protect_part(without_trailing_slashes(dir), Make::directory, roots, plan); !st2) return st2;
      }
      return {};
    }
    if (top == "/") return {};
    top = parent_dir(top);
  }
}

}  // namespace dshpty::shell
