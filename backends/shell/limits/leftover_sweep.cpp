#include "limits/leftover_sweep.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>

#include "proc/unique_fd.hpp"

namespace dshpty::shell::limits {
namespace {

// A nested dshpty (a host inside a limited session) makes its sessions' cgroups inside the
// outer one: an outer leftover may hold inner ones, which go first.
constexpr int kNestingBound = 4;

// Removes the unlocked `dshpty-*` directories below `parent`, theirs first.
void sweep_below(int parent, int depth) {
  const int listing = ::openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (listing < 0) return;
  DIR* dir = ::fdopendir(listing);
  if (!dir) {
    ::close(listing);
    return;
  }
  while (const dirent* entry = ::readdir(dir)) {
    if (std::strncmp(entry->d_name, "dshpty-", 7) != 0 || entry->d_type != DT_DIR) continue;
    proc::UniqueFd session(::openat(parent, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!session.valid() || !lock_session_dir(session.get())) continue;  // gone, or a live session's
    // Locked here: nobody holds it. EBUSY while it holds a process or a cgroup of its own.
    if (depth < kNestingBound) sweep_below(session.get(), depth + 1);
    (void)::unlinkat(parent, entry->d_name, AT_REMOVEDIR);
  }
  ::closedir(dir);
}

}  // namespace

bool lock_session_dir(int fd) {
  while (::flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

void sweep_leftovers(int parent, const std::string& where) {
  // At most once a minute a parent, by each process: a thousand opens at once would each read
  // a thousand directories, and a host that runs for days still sweeps what another left.
  static std::map<std::string, std::chrono::steady_clock::time_point> swept;
  const auto now = std::chrono::steady_clock::now();
  auto [at, first] = swept.try_emplace(where, now);
  if (!first && now - at->second < kSweepEvery) return;
  at->second = now;
  sweep_below(parent, 0);
}

}  // namespace dshpty::shell::limits
