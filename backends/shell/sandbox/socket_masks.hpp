// The host's path sockets a confined session would see, covered by a read-only bind of
// /dev/null each (docs/security.md, "No host rendezvous"). Listed right before each start of
// bwrap, not when the spawn was planned: a socket is its server's, and a server that exits
// unlinks it. One gone between the listing and bwrap's mount still leaves bwrap to make its
// mount point: where that is read-only, bwrap fails ("Can't create file at ..."), and the
// channel starts it again with a fresh list; where it is writable (a socket in the
// workspace), bwrap makes an empty file there, on the host, which settle() removes once the
// mounts are done (unlinked from the host's mount namespace, the mount over it inside is
// detached with it).
#pragma once

#include <sys/types.h>
#include <time.h>

#include <optional>
#include <string>
#include <vector>

#include "local/launch_plan.hpp"

namespace dshpty::shell {

class SocketMasks final : public LateMounts {
 public:
  // `hidden`: directories the sandbox replaces (their sockets need no mask) unless under
  // `shown_again`; `except`: the sockets bound in on purpose; `writable`: the writable roots,
  // where bwrap's mount point lands on the host. All canonical.
  SocketMasks(std::vector<std::string> hidden, std::vector<std::string> shown_again,
              std::vector<std::string> except, std::vector<std::string> writable);

  std::vector<std::string> list() override;
  bool gone_since(const std::string& said) const override;
  void settle() override;

  // The paths of the last listing.
  std::vector<std::string> listed() const;

 private:
  // A file system reuses a freed inode at once (ext4 its lowest free one): a socket bound
  // again at the path may have the old one's number, but not its change time.
  struct Identity {
    unsigned dev_major = 0, dev_minor = 0;
    unsigned long long ino = 0;
    long long ctime_sec = 0;
    unsigned ctime_nsec = 0;
    bool operator==(const Identity&) const = default;
  };
  struct Listed {
    std::string path;
    Identity id;
  };
  // The socket at `path` now, or nothing when there is none.
  static std::optional<Identity> socket_at(const std::string& path);
  std::vector<std::string> hidden_, shown_again_, except_, writable_;
  std::vector<Listed> listed_;
  timespec listed_at_{};  // the coarse clock, as file times are stamped
};

}  // namespace dshpty::shell
