// The helper's side of a lingering session (docs/outlive.md): its rendezvous in the state
// directory (the listening socket and the KEY.info record), the ring of output kept for the
// next host, the expiry timer while no host holds the session, and the authentication of
// whoever connects. The bridge (stdio_bridge.cpp) owns one once the host sent LINGER, and
// is handed a connection only once it passed every check: the peer's uid, the peer outside
// every session's tree, then an ATTACH with this session's token and owner. Nothing about
// the current attachment changes before that.
#pragma once

#include <ev.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "link/frames.hpp"
#include "dshpty/result.hpp"
#include "linger/peer_check.hpp"
#include "linger/record.hpp"
#include "linger/replay_ring.hpp"
#include "loop/timer.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell {

struct LingerSpec {
  std::uint32_t seconds = 0;
  std::uint64_t ring_bytes = 0;
  std::string state_dir;  // "" : the default
  std::string owner;
  std::optional<std::string> name;
  std::string type;
  // What a new host needs to read the shell's marks (dialect/dialect.hpp): the nonce the
  // first host gave it, and its dialect.
  std::string mark_nonce;
  std::string shell;
};

// What an ATTACH that passed every check asked for.
struct AttachRequest {
  std::uint32_t link_timeout_ms = 0;  // from its HELLO
  bool resume = false;                // the host that held the session reconnects
  std::uint64_t output_from = 0;      // resume: the output offset it consumed up to
};

class LingerKeeper {
 public:
  struct Hooks {
    // A connection that passed every check, with what its reader already holds. The
    // token it presented is spent by then: token() is the next one.
    std::function<void(proc::UniqueFd link, frames::FrameReader reader, AttachRequest request)> adopt;
    // Linger ran out with no host attached.
    std::function<void()> expired;
  };

  // Prepares the state directory, binds KEY.sock and writes KEY.info (attached). An error
  // names the cause; nothing is left behind then.
  static Result<std::unique_ptr<LingerKeeper>> start(struct ev_loop* loop, LingerSpec spec, Hooks hooks);
  // Removes the socket and the record (a tombstone, once written, stays).
  ~LingerKeeper();
  LingerKeeper(const LingerKeeper&) = delete;
  LingerKeeper& operator=(const LingerKeeper&) = delete;

  const std::string& key() const noexcept { return record_.key; }
  // What the next attach must present (each one is used once: a replayed token is wrong).
  const std::string& token() const noexcept { return record_.token; }
  linger::ReplayRing& ring() noexcept { return ring_; }
  void set_shell_pid(pid_t pid);
  void set_size(unsigned rows, unsigned cols);
  // A host holds the session (the expiry stops), or none does (linger counts down).
  void set_attached(bool attached);
  bool attached() const noexcept { return record_.attached; }
  // The host's SENDING frames: whether a send was live when the last host went away.
  void note_send(bool live) { send_live_ = live; }
  bool send_live() const noexcept { return send_live_; }
  // The host's SHOWN frames: its results showed the output up to this offset.
  void note_shown(std::uint64_t offset) { shown_ = std::max(shown_, offset); }
  std::uint64_t shown() const noexcept { return shown_; }
  // The session is over with no host to tell: KEY.tomb says how, for a late attach.
  void bury(std::optional<int> exit_code, std::optional<int> signal, std::string reason, std::string proof);

 private:
  LingerKeeper(struct ev_loop* loop, LingerSpec spec, Hooks hooks);
  static void on_accept(struct ev_loop*, ev_io* w, int);
  static void on_pending_readable(struct ev_loop*, ev_io* w, int);
  void on_pending_timeout();
  void on_expiry();
  void accept_one();
  void read_pending();
  // WELCOME then ERROR(4, why) to a connection refused, best effort, then closes it.
  void refuse(proc::UniqueFd fd, const std::string& why);
  void drop_pending();

  struct ev_loop* loop_;
  LingerSpec spec_;
  Hooks hooks_;
  std::string dir_;
  linger::FileId self_file_;
  linger::SessionRecord record_;
  linger::ReplayRing ring_;
  bool send_live_ = false;
  std::uint64_t shown_ = 0;
  bool buried_ = false;
  proc::UniqueFd listener_;
  ev_io accept_io_{};
  Timer expiry_;
  // One connection at a time is authenticated; it has a few seconds for HELLO and ATTACH.
  proc::UniqueFd pending_;
  frames::FrameReader pending_reader_;
  bool pending_hello_ = false;
  std::uint32_t pending_timeout_ms_ = 0;
  ev_io pending_io_{};
  Timer pending_timer_;
};

}  // namespace dshpty::shell
