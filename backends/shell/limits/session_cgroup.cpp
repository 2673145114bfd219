#include "limits/session_cgroup.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

namespace dshpty::shell::limits {

namespace {

// "NAME/file" into `out` (sized for the longest): the only paths this module opens, each
// relative to a parent's fd, so nothing outside the session's own cgroup is ever written.
bool join_path(char* out, std::size_t size, const char* name, const char* file) {
  const std::size_t n = std::strlen(name), f = std::strlen(file);
  if (n + 1 + f + 1 > size) return false;
  std::memcpy(out, name, n);
  out[n] = '/';
  std::memcpy(out + n + 1, file, f + 1);
  return true;
}

// Decimal, for the few numbers written (no stdio here).
int format(char* out, long long v) {
  char tmp[24];
  int n = 0;
  if (v == 0) tmp[n++] = '0';
  while (v > 0) {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  for (int i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
  out[n] = '\0';
  return n;
}

bool parse_number(const char* s, long long* out) {
  if (!*s) return false;
  long long v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9' || v > (1LL << 60)) return false;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return true;
}

int write_text(int fd, const char* text) {
  const std::size_t len = std::strlen(text);
  ssize_t n;
  while ((n = ::write(fd, text, len)) < 0 && errno == EINTR) {
  }
  if (n < 0) return errno;
  return n == static_cast<ssize_t>(len) ? 0 : EIO;
}

}  // namespace

bool SessionCgroup::take_flag(int argc, char** argv, int& i, bool* bad) {
  const char* flag = argv[i];
  const bool known = std::strcmp(flag, "--cgroup-dir") == 0 ||
                     std::strcmp(flag, "--limit-pids") == 0 || std::strcmp(flag, "--limit-memory") == 0 ||
                     std::strcmp(flag, "--limit-cpu-us") == 0;
  if (!known) return false;
  if (i + 1 >= argc) {
    *bad = true;
    return true;
  }
  const char* value = argv[++i];
  if (std::strcmp(flag, "--cgroup-dir") == 0) {
    Kind k;
    if (std::strcmp(value, "pids") == 0) {
      k = Kind::pids;
    } else if (std::strcmp(value, "memory") == 0) {
      k = Kind::memory;
    } else if (std::strcmp(value, "cpu") == 0) {
      k = Kind::cpu;
    } else if (std::strcmp(value, "v2") == 0) {
      k = Kind::v2;
    } else {
      *bad = true;
      return true;
    }
    if (ndirs_ >= kMaxCgroupDirs) {
      *bad = true;
      return true;
    }
    kinds_[ndirs_++] = k;
  } else {
    long long v = 0;
    if (!parse_number(value, &v) || v <= 0) {
      *bad = true;
      return true;
    }
    if (std::strcmp(flag, "--limit-pids") == 0) pids_ = v;
    if (std::strcmp(flag, "--limit-memory") == 0) memory_ = v;
    if (std::strcmp(flag, "--limit-cpu-us") == 0) cpu_us_ = v;
  }
  return true;
}

int SessionCgroup::dir_for(Kind k, bool* v2) const {
  for (int i = 0; i < ndirs_; ++i) {
    if (kinds_[i] == k && made_[i]) {
      *v2 = false;
      return kCgroupFdBase + i;
    }
  }
  for (int i = 0; i < ndirs_; ++i) {
    if (kinds_[i] == Kind::v2 && made_[i]) {
      *v2 = true;
      return kCgroupFdBase + i;
    }
  }
  return -1;
}

int SessionCgroup::write_file(int dir, const char* file, long long value, bool max_word) const {
  char path[160];
  if (!join_path(path, sizeof path, name_, file)) return ENAMETOOLONG;
  int fd = ::openat(dir, path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char text[48];
  int n = format(text, value);
  if (max_word) {  // v2 cpu.max: "QUOTA PERIOD"
    text[n++] = ' ';
    format(text + n, kCpuPeriodUs);
  }
  int err = write_text(fd, text);
  ::close(fd);
  return err;
}

int SessionCgroup::create(CgroupStep* step) {
  *step = CgroupStep::create;
  for (int i = 0; i < ndirs_; ++i) {
    made_[i] = true;
    char path[160];
    if (!join_path(path, sizeof path, name_, "cgroup.procs")) return ENAMETOOLONG;
    procs_[i] = ::openat(kCgroupFdBase + i, path, O_WRONLY | O_CLOEXEC);
    if (procs_[i] < 0) {
      *step = CgroupStep::join;
      return errno;
    }
  }
  bool v2 = false;
  if (pids_ > 0) {
    *step = CgroupStep::pids_max;
    int dir = dir_for(Kind::pids, &v2);
    if (dir < 0) return ENOENT;
    if (int err = write_file(dir, "pids.max", pids_)) return err;
  }
  if (memory_ > 0) {
    *step = CgroupStep::memory_max;
    int dir = dir_for(Kind::memory, &v2);
    if (dir < 0) return ENOENT;
    if (v2) {
      if (int err = write_file(dir, "memory.max", memory_)) return err;
      // Swap is counted apart in v2: none, so the bound is the tree's total.
      *step = CgroupStep::memsw_max;
      if (int err = write_file(dir, "memory.swap.max", 0); err && err != ENOENT) return err;
    } else {
      if (int err = write_file(dir, "memory.limit_in_bytes", memory_)) return err;
      // Memory and swap together, where the kernel accounts swap (absent otherwise).
      *step = CgroupStep::memsw_max;
      if (int err = write_file(dir, "memory.memsw.limit_in_bytes", memory_); err && err != ENOENT) return err;
    }
  }
  if (cpu_us_ > 0) {
    *step = CgroupStep::cpu_max;
    int dir = dir_for(Kind::cpu, &v2);
    if (dir < 0) return ENOENT;
    if (v2) {
      if (int err = write_file(dir, "cpu.max", cpu_us_, true)) return err;
    } else {
      if (int err = write_file(dir, "cpu.cfs_period_us", kCpuPeriodUs)) return err;
      if (int err = write_file(dir, "cpu.cfs_quota_us", cpu_us_)) return err;
    }
  }
  // The watches: v2 notifies a change of pids.events and memory.events through inotify;
  // v1 signals an OOM on an eventfd registered through cgroup.event_control, and nothing
  // of a refused fork (its pids.events changes unseen by inotify: measured on 6.18), so a
  // v1 pids limit takes no inotify instance (fs.inotify.max_user_instances bounds them):
  // its counter is read when asked. The helper sleeps until something happens.
  *step = CgroupStep::watch;
  char path[160];
  bool pids_v2 = false, memory_v2 = false;
  if (pids_ > 0) (void)dir_for(Kind::pids, &pids_v2);
  if (memory_ > 0) (void)dir_for(Kind::memory, &memory_v2);
  if ((pids_ > 0 && pids_v2) || (memory_ > 0 && memory_v2)) {
    inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (inotify_ < 0) {
      const int err = errno;
      if (err == EMFILE) {
        // EMFILE is both the user's inotify instances used up and this process's fd table
        // full: a free fd says which, so the host can name the setting.
        const int spare = ::fcntl(0, F_DUPFD_CLOEXEC, 0);
        if (spare >= 0) {
          ::close(spare);
          *step = CgroupStep::watch_instances;
        }
      }
      return err;
    }
  }
  auto watch = [&](int dir, const char* file, int* fd_out) -> int {
    if (!join_path(path, sizeof path, name_, file)) return ENAMETOOLONG;
    *fd_out = ::openat(dir, path, O_RDONLY | O_CLOEXEC);
    if (*fd_out < 0) return errno;
    char proc_path[48] = "/proc/self/fd/";
    format(proc_path + std::strlen(proc_path), *fd_out);
    if (::inotify_add_watch(inotify_, proc_path, IN_MODIFY) < 0) return errno;
    return 0;
  };
  if (pids_ > 0) {
    int dir = dir_for(Kind::pids, &v2);
    if (v2) {
      if (int err = watch(dir, "pids.events", &pids_events_)) return err;
    } else {
      if (!join_path(path, sizeof path, name_, "pids.events")) return ENAMETOOLONG;
      pids_events_ = ::openat(dir, path, O_RDONLY | O_CLOEXEC);
      if (pids_events_ < 0) return errno;
    }
  }
  if (memory_ > 0) {
    int dir = dir_for(Kind::memory, &v2);
    if (v2) {
      if (int err = watch(dir, "memory.events", &memory_events_)) return err;
    } else {
      if (!join_path(path, sizeof path, name_, "memory.oom_control")) return ENAMETOOLONG;
      memory_events_ = ::openat(dir, path, O_RDONLY | O_CLOEXEC);
      if (memory_events_ < 0) return errno;
      oom_eventfd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      if (oom_eventfd_ < 0) return errno;
      if (!join_path(path, sizeof path, name_, "cgroup.event_control")) return ENAMETOOLONG;
      int control = ::openat(dir, path, O_WRONLY | O_CLOEXEC);
      if (control < 0) return errno;
      char line[48];
      int n = format(line, oom_eventfd_);
      line[n++] = ' ';
      format(line + n, memory_events_);
      int err = write_text(control, line);
      ::close(control);
      if (err) return err;
    }
  }
  return 0;
}

int SessionCgroup::join_self() const {
  for (int i = 0; i < ndirs_; ++i) {
    if (procs_[i] < 0) continue;
    if (int err = write_text(procs_[i], "0")) return err;
  }
  return 0;
}

long long SessionCgroup::read_counter(int fd, const char* key) const {
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const std::size_t klen = std::strlen(key);
  for (char* line = buf; line && *line;) {
    char* end = std::strchr(line, '\n');
    if (end) *end = '\0';
    if (std::strncmp(line, key, klen) == 0 && line[klen] == ' ') {
      long long v = 0;
      return parse_number(line + klen + 1, &v) ? v : 0;
    }
    line = end ? end + 1 : nullptr;
  }
  return 0;
}

unsigned SessionCgroup::check() {
  char drain[512];
  if (inotify_ >= 0) {
    while (::read(inotify_, drain, sizeof drain) > 0) {
    }
  }
  unsigned hits = 0;
  if (oom_eventfd_ >= 0) {
    // v1 signals before its OOM killer picks the victim: the counter may not have moved
    // yet when this runs, but the signal alone says the tree hit its memory limit.
    while (::read(oom_eventfd_, drain, 8) > 0) hits |= kHitMemory;
  }
  if (const long long max = read_counter(pids_events_, "max"); max > pids_seen_) {
    pids_seen_ = max;
    hits |= kHitPids;
  }
  if (const long long kills = read_counter(memory_events_, "oom_kill"); kills > oom_seen_) {
    oom_seen_ = kills;
    hits |= kHitMemory;
  }
  return hits;
}

int SessionCgroup::remove_dirs() {
  int first = 0;
  for (int i = 0; i < ndirs_; ++i) {
    const int dir = kCgroupFdBase + i;
    // The directory's name is the last part of its fd's path (the path before it may be
    // another mount namespace's, in a sandbox; the name is the directory's own).
    char link[48] = "/proc/self/fd/";
    format(link + std::strlen(link), dir);
    char target[256];
    const ssize_t n = ::readlink(link, target, sizeof target - 1);
    int err = 0;
    if (n <= 0 || n >= static_cast<ssize_t>(sizeof target - 1)) {
      err = n < 0 ? errno : ENAMETOOLONG;
    } else {
      target[n] = '\0';
      const char* name = std::strrchr(target, '/');
      name = name ? name + 1 : target;
      // The name's prefix is the host's ("dshpty-"): never anything else is removed.
      const bool ours = std::strncmp(name, "dshpty-", 7) == 0;
      const int parent = ours ? ::openat(dir, "..", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
      struct stat self {}, named {};
      if (!ours) {
        err = EINVAL;
      } else if (parent < 0) {
        err = errno;
      } else if (::fstat(dir, &self) < 0 || ::fstatat(parent, name, &named, AT_SYMLINK_NOFOLLOW) < 0) {
        err = errno;
      } else if (self.st_dev != named.st_dev || self.st_ino != named.st_ino) {
        err = ESTALE;  // the name holds another directory now: not ours
      } else if (::unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
        err = errno;
      }
      if (parent >= 0) ::close(parent);
    }
    if (err && !first) first = err;
  }
  release();
  return first;
}

int SessionCgroup::release() {
  for (int* fd : {&inotify_, &oom_eventfd_, &pids_events_, &memory_events_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  for (int i = 0; i < ndirs_; ++i) {
    if (procs_[i] >= 0) ::close(procs_[i]);
    procs_[i] = -1;
  }
  return 0;
}

}  // namespace dshpty::shell::limits
