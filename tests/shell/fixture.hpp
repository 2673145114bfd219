// Shared by the shell suite: a private libev loop, a per-test environment marker that
// finds a session's processes independently of the code under test, and a destructor
// that kills whatever survived so a failing test never leaks a process.
#pragma once

#include <ev.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dshpty/backend.hpp"
#include "dshpty/shell.hpp"
#include "shell_session.hpp"

namespace dshpty::test {

using namespace std::chrono_literals;

// Pids of live processes whose environment holds DSHPTY_TEST_MARK=<marker> (zombies have
// no readable environment: see zombie_children()).
std::vector<pid_t> marked_processes(const std::string& marker);
// Pids of marked processes whose command name is `comm`.
std::vector<pid_t> marked_processes_named(const std::string& marker, const std::string& comm);
// Zombie children of this process.
std::vector<pid_t> zombie_children();
// SIGKILLs marked processes until none is left (bounded); reaps `own_children` if zombies.
void kill_marked(const std::string& marker, const std::vector<pid_t>& own_children = {});
// A process-unique marker.
std::string fresh_marker(const char* what);
// The foreground process group of `pid`'s terminal (tpgid in /proc/<pid>/stat), or -1.
pid_t foreground_pgid(pid_t pid);
// Entries in /proc/self/fd.
int count_open_fds();

// A send's result in one line for failure messages: reason, exit status, cwd, hidden
// input and the viewport (or the error).
std::string show(const Result<SendResult>& r);
// A send request with optional idle and timeout.
SendRequest request(std::string text, std::optional<std::chrono::milliseconds> idle = {},
                    std::optional<std::chrono::milliseconds> timeout = {});

// Runs `loop` until pred() holds or `timeout` passes (a one-shot timer bounds the wait).
bool run_until(struct ev_loop* loop, const std::function<bool()>& pred,
               std::chrono::milliseconds timeout = 20s);

// The result of a spawn driven to completion.
struct Spawned {
  std::unique_ptr<BackendSession> session;
  Error error;
  shell::ShellSession* shell() const { return dynamic_cast<shell::ShellSession*>(session.get()); }
};

class ShellFixture {
 public:
  explicit ShellFixture(struct ev_loop* loop = nullptr);
  ~ShellFixture();
  ShellFixture(const ShellFixture&) = delete;
  ShellFixture& operator=(const ShellFixture&) = delete;

  struct ev_loop* loop() const { return loop_; }
  const std::string& marker() const { return marker_; }
  // The default test config: the build tree's helper, the marker in the shell's env.
  ShellConfig config() const;

  // Spawns through a shell backend with `config` and runs the loop until it completes.
  Spawned spawn(ShellConfig config, SpawnRequest request = {}, AbortSignal signal = {});
  Spawned spawn() { return spawn(config()); }
  // Spawns through any backend on this fixture's loop (a remote one, say) the same way.
  Spawned spawn_on(Backend& backend, SpawnRequest request = {}, AbortSignal signal = {});
  // Closes and runs the loop until the close completes; the result of the close.
  Status close(BackendSession& session, std::chrono::milliseconds timeout = 30s);
  // Writes a line to the shell.
  void type(BackendSession& session, const std::string& line);

  // Starts a send and runs the loop until it completes. The operation is kept in `op`
  // when given (for read_output after the fact), else destroyed.
  Result<SendResult> send(BackendSession& session, SendRequest request,
                          std::unique_ptr<BackendSendOperation>* op = nullptr,
                          std::chrono::milliseconds timeout = 120s);
  Result<SendResult> send(BackendSession& session, std::string text) {
    SendRequest r;
    r.text = std::move(text);
    return send(session, std::move(r));
  }

  // Helpers this fixture saw (for reaping in the destructor).
  void remember(const Spawned& s);

  // With DSHPTY_TEST_OBSERVE=1 in the environment, every session spawned with config() is
  // watched as a person's watcher would watch it, and more often: observe() after every
  // chunk it prints (docs/watch.md). A suite run so shows that no observer changes a send's
  // result or timing. How many observations were made:
  std::uint64_t observations() const { return observed_->count; }

 private:
  struct ev_loop* loop_;
  bool own_loop_;
  std::string marker_;
  std::vector<pid_t> helpers_;
  // The sessions by id, for the observing output hook: only the session printing calls it,
  // so the one it finds is alive.
  struct Observed {
    bool on = false;
    std::map<std::string, BackendSession*, std::less<>> sessions;
    std::uint64_t count = 0;
  };
  std::shared_ptr<Observed> observed_ = std::make_shared<Observed>();
};

}  // namespace dshpty::test
