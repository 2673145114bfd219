// Helpers of the embed suite's host programs. They use only the public API, as a host
// would, and link the shared library: no internal header, no static part.
#pragma once

#include <dirent.h>
#include <ev.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <dshpty/service.hpp>
#include <dshpty/shell.hpp>

namespace embed {

using namespace std::chrono_literals;

// Runs fn when it goes out of scope (a failed REQUIRE throws): stops a test's watchers.
class Defer {
 public:
  explicit Defer(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~Defer() { fn_(); }
  Defer(const Defer&) = delete;
  Defer& operator=(const Defer&) = delete;

 private:
  std::function<void()> fn_;
};

// Runs `loop` until pred() holds or `bound` passes; a one-shot timer bounds the wait (it
// is a deadline against hangs, never a timing assertion). True when pred() held.
inline bool run_until(struct ev_loop* loop, const std::function<bool()>& pred,
                      std::chrono::milliseconds bound = 30s) {
  struct Guard {
    ev_timer timer;
    bool fired = false;
  } guard;
  ev_timer_init(&guard.timer, [](struct ev_loop*, ev_timer* w, int) {
    reinterpret_cast<Guard*>(w)->fired = true;
  }, std::chrono::duration<double>(bound).count(), 0.);
  ev_timer_start(loop, &guard.timer);
  while (!pred() && !guard.fired) ev_run(loop, EVRUN_ONCE);
  ev_timer_stop(loop, &guard.timer);
  return pred();
}

// A process-unique value for DSHPTY_EMBED_MARK, put in each shell session's environment so
// a test can find the session's processes without asking the code under test.
inline std::string fresh_marker(const char* what) {
  static std::atomic<int> serial{0};
  return std::string(what) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++serial);
}

// Live processes whose environment holds DSHPTY_EMBED_MARK=<marker>.
inline std::vector<pid_t> marked_processes(const std::string& marker) {
  std::vector<pid_t> found;
  const std::string needle = "DSHPTY_EMBED_MARK=" + marker;
  DIR* proc = ::opendir("/proc");
  if (!proc) return found;
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream environ("/proc/" + std::string(entry->d_name) + "/environ",
                          std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    for (std::size_t at = 0; at < env.size();) {
      std::size_t next = env.find('\0', at);
      if (next == std::string::npos) next = env.size();
      if (env.compare(at, next - at, needle) == 0) {
        found.push_back(static_cast<pid_t>(pid));
        break;
      }
      at = next + 1;
    }
  }
  ::closedir(proc);
  return found;
}

// Shell config for a test: the marker in the session's environment (the helper comes from
// $DSHPTY_SUPERVISOR, which the suite sets to this build's).
inline dshpty::ShellConfig marked_config(const std::string& marker) {
  dshpty::ShellConfig config;
  config.env["DSHPTY_EMBED_MARK"] = marker;
  return config;
}

// Disposes `service` and drives `loop` until that completed (bounded); then SIGKILLs any
// process still carrying `marker`, so a failing test leaves nothing behind. Returns the
// disposal's status (a timeout reads as an ABORTED error).
inline dshpty::Status dispose_and_sweep(dshpty::Service& service, struct ev_loop* loop,
                                        const std::string& marker = {}) {
  bool done = false;
  dshpty::Status status = dshpty::make_error(dshpty::Code::ABORTED, "disposal did not complete");
  service.dispose([&](dshpty::Status s) {
    status = std::move(s);
    done = true;
  });
  run_until(loop, [&] { return done; });
  if (!marker.empty()) {
    for (int round = 0; round < 100; ++round) {
      auto left = marked_processes(marker);
      if (left.empty()) break;
      for (pid_t pid : left) ::kill(pid, SIGKILL);  // killed ones turn zombie: unlisted
    }
  }
  return status;
}

}  // namespace embed
