#include "limits/leftover_sweep.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include "proc/unique_fd.hpp"

namespace dshpty::shell::limits {

bool lock_session_dir(int fd) {
  while (::flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

void sweep_leftovers(int parent, const std::string& where) {
  // A parent swept once: what a host kills later is the next host's to sweep. (One look a
  // process, not one an open: a thousand opens would each read a thousand directories.)
  static std::set<std::string> swept;
  if (!swept.insert(where).second) return;
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
    (void)::unlinkat(parent, entry->d_name, AT_REMOVEDIR);
  }
  ::closedir(dir);
}

}  // namespace dshpty::shell::limits
