// The few /proc reads both halves of the shell backend make: the host's stdin probe
// (proc/stdin_probe) and the supervisor helper (supervisor/). Hence the helper's rules for all of
// it: system calls only (no stdio, no allocation, no exceptions), every fd O_CLOEXEC and
// closed before returning. Linux only.
#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace dshpty::procfs {

// "/proc/<pid>/<rest>" or "/proc/<pid>/task/<tid>/<rest>", built without snprintf.
class Path {
 public:
  explicit Path(pid_t pid) { number(pid); }
  Path& text(const char* s) {
    while (*s && end_ < buf_ + sizeof buf_ - 1) *end_++ = *s++;
    *end_ = '\0';
    return *this;
  }
  Path& number(pid_t value) {
    char digits[16];
    int n = 0;
    auto v = static_cast<unsigned>(value);
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n && end_ < buf_ + sizeof buf_ - 1) *end_++ = digits[--n];
    *end_ = '\0';
    return *this;
  }
  const char* c_str() const { return buf_; }

 private:
  char buf_[96] = "/proc/";
  char* end_ = buf_ + 6;
};

inline int open_file(const char* path, int flags = O_RDONLY) {
  int fd;
  while ((fd = ::open(path, flags | O_CLOEXEC | O_NOCTTY)) < 0 && errno == EINTR) {
  }
  return fd;
}

// Reads a small /proc file whole (up to cap - 1 bytes), NUL-terminated: its length, or -1.
// Every file read this way (stat, status, syscall, fdinfo) is one seq_file record,
// produced whole by the first read: a read shorter than asked is the end.
inline long read_small(const char* path, char* buf, std::size_t cap) {
  int fd = open_file(path);
  if (fd < 0) return -1;
  std::size_t len = 0;
  while (len + 1 < cap) {
    std::size_t want = cap - 1 - len;
    ssize_t n = ::read(fd, buf + len, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<std::size_t>(n);
    if (static_cast<std::size_t>(n) < want) break;
  }
  ::close(fd);
  buf[len] = '\0';
  return static_cast<long>(len);
}

// A decimal at p, with an optional '-'; advances p past it. False when there is none.
inline bool parse_decimal(const char*& p, long& out) {
  const char* q = p;
  bool negative = *q == '-';
  if (negative) ++q;
  if (*q < '0' || *q > '9') return false;
  long value = 0;
  while (*q >= '0' && *q <= '9') {
    if (value < 0x7FFFFFFFFFFFFFFL) value = value * 10 + (*q - '0');
    ++q;
  }
  out = negative ? -value : value;
  p = q;
  return true;
}

// The fields of /proc/<pid>/stat the backend uses.
struct Stat {
  char state = '?';  // 'Z' (zombie) and 'X' (dead) have no children and need no signal
  pid_t ppid = 0;
  pid_t pgrp = 0;
  unsigned tty_nr = 0;
  long threads = 0;  // num_threads: children hang off the thread that forked them
  unsigned long flags = 0;  // the kernel's PF_* flags (field 9)
  bool exiting() const noexcept { return (flags & kExitingFlag) != 0; }
  // PF_EXITING: set when the process began to exit, before it is a zombie. A signal sent to
  // it then does nothing; /proc still says running ('R') a while.
  static constexpr unsigned long kExitingFlag = 0x4;
};

// "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
// utime stime cutime cstime priority nice num_threads ...". comm may hold anything, ')'
// and spaces included, so the fields start after the last ')'. Parsed by hand: sscanf's
// cost showed in the probe's profile, and the helper has no stdio. False when the process
// is gone (or the line is not what this expects).
inline bool read_stat(pid_t pid, Stat& out) {
  char buf[1024];
  if (read_small(Path(pid).text("/stat").c_str(), buf, sizeof buf) <= 0) return false;
  const char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ' || p[2] == '\0' || p[3] != ' ') return false;
  out.state = p[2];
  p += 4;                // now at ppid, field 4
  long fields[17] = {};  // fields 4..20
  for (long& field : fields) {
    if (!parse_decimal(p, field)) return false;
    if (*p != ' ' && *p != '\n' && *p != '\0') return false;
    if (*p == ' ') ++p;
  }
  out.ppid = static_cast<pid_t>(fields[0]);        // field 4
  out.pgrp = static_cast<pid_t>(fields[1]);        // field 5
  out.tty_nr = static_cast<unsigned>(fields[3]);   // field 7
  out.flags = static_cast<unsigned long>(fields[5]);  // field 9
  out.threads = fields[16];                        // field 20
  return true;
}

// A zombie's status as waitpid would report it: field 52 (exit_code) of its stat, which
// Linux has since 3.5. False when the process is gone or the field is not there.
inline bool exit_status(pid_t pid, int& out) {
  char buf[1024];
  const long n = read_small(Path(pid).text("/stat").c_str(), buf, sizeof buf);
  if (n <= 0) return false;
  const char* p = std::strrchr(buf, ')');
  if (!p) return false;
  long field = 2;  // ')' ends field 2 (comm)
  long value = 0;
  for (++p; *p == ' ';) {
    ++p;
    if (!parse_decimal(p, value)) {
      while (*p && *p != ' ') ++p;  // the state, a letter
    }
    ++field;
    if (field == 52) {
      out = static_cast<int>(value);
      return true;
    }
  }
  return false;
}

// A signal mask line of a /proc/<pid>/status text ("SigIgn:", "SigPnd:", "ShdPnd:"): a hex
// mask with bit signo-1 for each. 0 when the line is not there.
inline unsigned long long mask_in(const char* status, const char* line) {
  const char* p = std::strstr(status, line);
  if (!p) return 0;
  p += std::strlen(line);
  while (*p == ' ' || *p == '\t') ++p;
  unsigned long long mask = 0;
  for (;; ++p) {
    if (*p >= '0' && *p <= '9') mask = mask << 4 | static_cast<unsigned>(*p - '0');
    else if (*p >= 'a' && *p <= 'f') mask = mask << 4 | static_cast<unsigned>(*p - 'a' + 10);
    else break;
  }
  return mask;
}

// A process's signal masks, from one read of its status. Zeros when it is gone (or pid is
// none).
struct SignalMasks {
  unsigned long long pending = 0;  // its own and its thread group's (SigPnd | ShdPnd)
  unsigned long long ignored = 0;  // SigIgn
  unsigned long long caught = 0;   // SigCgt: a handler is set
};
inline SignalMasks signal_masks(pid_t pid) {
  char buf[2048];
  if (pid <= 0 || read_small(Path(pid).text("/status").c_str(), buf, sizeof buf) <= 0) return {};
  return {.pending = mask_in(buf, "\nSigPnd:") | mask_in(buf, "\nShdPnd:"),
          .ignored = mask_in(buf, "\nSigIgn:"),
          .caught = mask_in(buf, "\nSigCgt:")};
}

// The signals a process ignores (SigIgn).
inline unsigned long long ignored_signals(pid_t pid) { return signal_masks(pid).ignored; }

// Calls visit(id) -> bool (true stops) for every numeric entry of the directory `path`,
// through getdents64 on a stack buffer (opendir() would malloc 32 KiB). False when the
// directory cannot be opened.
template <class F>
bool for_each_numeric_entry(const char* path, F&& visit) {
  int fd = open_file(path, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return false;
  alignas(8) char buf[4096];
  bool stop = false;
  while (!stop) {
    ssize_t n = ::getdents64(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t off = 0; off < n && !stop;) {
      auto* entry = reinterpret_cast<dirent64*>(buf + off);
      off += entry->d_reclen;
      const char* name = entry->d_name;
      long id = 0;
      if (*name != '-' && parse_decimal(name, id) && *name == '\0' && id > 0)
        stop = visit(static_cast<pid_t>(id));
    }
  }
  ::close(fd);
  return true;
}

// Calls on_pid(pid) for every pid listed in the children file at `path` ("12 34 56 "),
// parsing across reads (a busy parent's list spans many). 0, or the errno of the open.
template <class F>
int for_each_listed_pid(const char* path, F&& on_pid) {
  int fd = open_file(path);
  if (fd < 0) return errno;
  char buf[4096];
  long pid = -1;  // the number being parsed; it may continue in the next read
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      char c = buf[i];
      if (c >= '0' && c <= '9') {
        if (pid < 0x7FFFFFFF) pid = (pid < 0 ? 0 : pid * 10) + (c - '0');
      } else if (pid >= 0) {
        if (pid > 0) on_pid(static_cast<pid_t>(pid));
        pid = -1;
      }
    }
    // seq_file stops a read short of the buffer only at the end, or when the next record
    // (one pid and its space, at most 11 bytes) would not fit: a clearly short read is the
    // end, which spares the read that would return 0.
    if (static_cast<std::size_t>(n) + 16 < sizeof buf) break;
  }
  if (pid > 0) on_pid(static_cast<pid_t>(pid));
  ::close(fd);
  return 0;
}

enum class ChildrenRead {
  ok,
  gone,         // the process (or every thread of it) exited meanwhile
  unsupported,  // the file is missing for a task that exists: no CONFIG_PROC_CHILDREN
};

// Calls on_pid(pid) for each child of `pid`, from /proc/<pid>/task/<tid>/children: a child
// hangs off the *thread* that forked it, so every task's file, or only the main thread's
// when `threads` (from its stat) is 1, which spares listing the task directory.
template <class F>
ChildrenRead for_each_child(pid_t pid, long threads, F&& on_pid) {
  if (threads == 1) {
    int err = for_each_listed_pid(Path(pid).text("/task/").number(pid).text("/children").c_str(), on_pid);
    if (err == 0) return ChildrenRead::ok;
    bool exists = ::access(Path(pid).text("/task").c_str(), F_OK) == 0;
    return err == ENOENT && exists ? ChildrenRead::unsupported : ChildrenRead::gone;
  }
  bool any = false;
  bool listed = for_each_numeric_entry(Path(pid).text("/task").c_str(), [&](pid_t tid) {
    // A thread that exited meanwhile has no file any more, and no children either.
    if (for_each_listed_pid(Path(pid).text("/task/").number(tid).text("/children").c_str(), on_pid) == 0)
      any = true;
    return false;
  });
  return listed && any ? ChildrenRead::ok : ChildrenRead::gone;
}

}  // namespace dshpty::procfs
