// The host's watch socket (docs/watch.md): DIR/host-PID.watch in the per-user state
// directory of docs/outlive.md, where `dshpty-repl watch` finds the host. A peer is checked
// as an attach is (linger/peer_check.hpp: this uid, outside every session's tree) before it
// may say anything, then it sends one request line and only reads:
//   {"op":"list"}                 -> {"host":PID,"sessions":[{sessionId,name,owner,...}]}, closed
//   {"op":"watch","session":WORD} -> frames, one JSON object a line, until the session ends
//                                    ({"ended":WHY}) or the peer leaves
// A refusal or a bad request is {"error":{"code","message"}} and the connection is closed.
// There is no message that writes, resizes, signals or closes: any byte a watcher sends
// after its request ends its connection.
#pragma once

#include <ev.h>

#include <map>
#include <memory>
#include <string>

#include "dshpty/loop.hpp"
#include "linger/peer_check.hpp"
#include "observer_hub.hpp"

namespace dshpty::watch {

// The name of a host's watch socket in the state directory: "host-PID.watch".
std::string watch_socket_name(long pid);
inline constexpr std::string_view kWatchSuffix = ".watch";

class WatchSocket {
 public:
  // Bounds a peer's request: its size, and how long it may take to send it.
  static constexpr std::size_t kMaxRequestBytes = 4096;
  static constexpr std::chrono::milliseconds kRequestTimeout{5'000};
  // Connections held at once; a peer past them is closed unanswered, so no process can make
  // the host hold fds and frames without bound.
  static constexpr std::size_t kMaxConnections = 64;

  // `helper_file`: the session helper's executable, for the peer check's ancestry walk.
  WatchSocket(struct ev_loop* loop, ObserverHub& hub, linger::FileId helper_file);
  // Closes every connection and removes the socket file.
  ~WatchSocket();
  WatchSocket(const WatchSocket&) = delete;
  WatchSocket& operator=(const WatchSocket&) = delete;

  // Prepares the state directory (`configured`, else the default; created 0700, checked)
  // and listens on its watch socket (mode 0600). BACKEND_FAILED naming the cause.
  Status listen(const std::string& configured);
  const std::string& path() const noexcept { return path_; }

 private:
  class Connection;
  static void on_accept(struct ev_loop* loop, ev_io* watcher, int revents);
  void accept_all();
  void retire(Connection* connection);

  struct ev_loop* loop_;
  ObserverHub& hub_;
  linger::FileId helper_file_;
  Deferred deferred_;
  int fd_ = -1;
  ev_io accept_watcher_{};
  std::string path_;
  std::map<Connection*, std::unique_ptr<Connection>> connections_;
};

}  // namespace dshpty::watch
