// KEY.remote in this host's state directory: what a restarted host needs to take a
// lingering remote session back (the key, the next token, the shell's marks; docs/outlive.md).
// The stream channel keeps it in step with the key and token, and removes it when the
// session is over, only while it is still this host's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace dshpty::shell {

struct RemoteRecordFields {
  std::string key, token;
  pid_t shell_pid = -1;
  unsigned rows = 0, cols = 0;
};

class RemoteRecord {
 public:
  // `dir` "" : none. Written only for a session that `reconnects`; the rest is the
  // session's LINGER (StreamLaunch::Linger).
  RemoteRecord(bool reconnects, std::string dir, std::string owner, std::string name, std::string type,
               std::uint32_t linger_seconds, std::string mark_nonce, std::string shell);
  RemoteRecord() = default;
  // Writes (or rewrites) it. Best effort: without it only a restart loses the session.
  void write(const RemoteRecordFields& fields);
  // Removes it if this host wrote it and it still names this host.
  void remove(const std::string& key);
  // Not this host's to remove any more (it left the session to the next one).
  void keep() { written_ = false; }
  // Removes whatever record `key` has (a session the far side says is gone).
  void drop(const std::string& key) const;

 private:
  bool reconnects_ = false;
  std::string dir_, owner_, name_, type_;
  std::uint32_t linger_seconds_ = 0;
  std::string mark_nonce_, shell_;
  bool written_ = false;
};

}  // namespace dshpty::shell
