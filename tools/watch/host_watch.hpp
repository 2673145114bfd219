// Everything a tool host does for people watching (docs/watch.md): the observer hub, the
// watch socket in the state directory (unless --no-watch), and the output tap that tells the
// hub a session printed. A host makes one before it registers its backends (the tap goes
// into their configuration) and starts it once its engine runs.
#pragma once

#include <ev.h>

#include <memory>
#include <string>
#include <string_view>

#include "dshpty/service.hpp"
#include "observer_hub.hpp"
#include "session_options.hpp"
#include "watch_socket.hpp"

namespace dshpty::watch {

class HostWatch {
 public:
  HostWatch(struct ev_loop* loop, Service& service) : loop_(loop), hub_(loop, service) {}

  // Listens on the watch socket unless `options.watch` is false (then nobody may watch,
  // and nothing is created). BACKEND_FAILED naming the cause (an unsafe state directory):
  // the tools say it on stderr and run on without the socket.
  Status start(const tool::SessionOptions& options, const std::string& supervisor_path);
  // The output tap (ShellConfig::on_raw_output): `session_id` printed.
  void output_arrived(std::string_view session_id) { hub_.output_arrived(session_id); }
  unsigned observers(std::string_view session_id) const { return hub_.count(session_id); }
  ObserverHub& hub() noexcept { return hub_; }
  // The watch socket's path ("" when not listening).
  std::string socket_path() const { return socket_ ? socket_->path() : std::string(); }

 private:
  struct ev_loop* loop_;
  ObserverHub hub_;
  std::unique_ptr<WatchSocket> socket_;
};

}  // namespace dshpty::watch
