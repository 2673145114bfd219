// dshpty as a host embeds it: one Service and one shell backend on a libev loop the bench
// owns, driven until each completion arrives (with a bounded deadline). Throws on failure.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "dshpty/service.hpp"
#include "dshpty/shell.hpp"
#include "plan.hpp"

struct ev_loop;

namespace bench {

class Harness {
 public:
  // `shell` tweaks the bench's configuration (argv, timeouts) before the backend is made.
  explicit Harness(const Plan& plan,
                   const std::function<void(dshpty::ShellConfig&)>& shell = {});
  ~Harness();  // disposes the service and runs the loop until that completed
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  struct ev_loop* loop() const noexcept { return loop_; }
  dshpty::Service& service() { return *service_; }
  const dshpty::Owner& owner() const { return owner_; }

  // Runs the loop until done() or the limit passed; false on the limit.
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds limit);

  // spawn/send/close, each waited for; they throw the error's message on failure.
  dshpty::SpawnResult spawn();
  void spawn_async(std::function<void(dshpty::Result<dshpty::SpawnResult>)> done);
  dshpty::SendResult send(const std::string& id, std::string text,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30));
  void close(const std::string& id);
  void close_async(const std::string& id, std::function<void(dshpty::Result<bool>)> done);

  // Raw PTY bytes delivered to the backend since the last reset (on_raw_output).
  unsigned long long raw_bytes = 0;
  unsigned long long raw_chunks = 0;

 private:
  struct ev_loop* loop_;
  std::unique_ptr<dshpty::Service> service_;
  dshpty::Owner owner_;
};

// The supervisor the bench uses: --supervisor, $DSHPTY_SUPERVISOR, or this build tree's.
std::string find_supervisor(const Plan& plan);

}  // namespace bench
