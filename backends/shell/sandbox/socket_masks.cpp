#include "sandbox/socket_masks.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "sandbox/sandbox_paths.hpp"

namespace dshpty::shell {

namespace {

bool at_or_after(const statx_timestamp& t, const timespec& since) {
  return t.tv_sec > since.tv_sec || (t.tv_sec == since.tv_sec && static_cast<long>(t.tv_nsec) >= since.tv_nsec);
}

// Made at or after `since` by us: the birth time where the file system keeps one, else the
// change time (a file whose inode changed since is taken as new: only empty files and empty
// directories bwrap's way are ever removed).
bool ours_since(const struct statx& st, const timespec& since) {
  if (st.stx_uid != ::geteuid()) return false;
  return (st.stx_mask & STATX_BTIME) ? at_or_after(st.stx_btime, since) : at_or_after(st.stx_ctime, since);
}

bool look(const std::string& path, struct statx& st) {
  return ::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &st) == 0;
}

}  // namespace

SocketMasks::SocketMasks(std::vector<std::string> hidden, std::vector<std::string> shown_again,
                         std::vector<std::string> except, std::vector<std::string> writable)
    : hidden_(std::move(hidden)), shown_again_(std::move(shown_again)), except_(std::move(except)),
      writable_(std::move(writable)) {}

std::optional<SocketMasks::Identity> SocketMasks::socket_at(const std::string& path) {
  struct statx st {};
  if (!look(path, st) || !S_ISSOCK(st.stx_mode)) return std::nullopt;
  return Identity{st.stx_dev_major, st.stx_dev_minor, st.stx_ino, st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec};
}

std::vector<std::string> SocketMasks::list() {
  // Taken before the listing: whatever bwrap makes for it is stamped no earlier (file times
  // come from the coarse clock).
  ::clock_gettime(CLOCK_REALTIME_COARSE, &listed_at_);
  listed_.clear();
  std::vector<std::string> args;
  for (auto& path : visible_host_sockets(hidden_, shown_again_, except_)) {
    const auto id = socket_at(path);
    if (!id) continue;  // gone already
    args.insert(args.end(), {"--ro-bind", "/dev/null", path});
    listed_.push_back({std::move(path), *id});
  }
  return args;
}

std::vector<std::string> SocketMasks::listed() const {
  std::vector<std::string> out;
  for (const auto& l : listed_) out.push_back(l.path);
  return out;
}

bool SocketMasks::gone_since(const std::string& said) const {
  for (const auto& l : listed_) {
    // bwrap names the mount's destination, alone ("Can't create file at PATH: ...") or under
    // its new root ("... on /newroot/PATH: ...").
    bool named = false;
    for (auto at = said.find(l.path); at != std::string::npos && !named; at = said.find(l.path, at + 1)) {
      const std::size_t end = at + l.path.size();
      named = end == said.size() || said[end] == ':' || said[end] == ' ' || said[end] == '\n';
    }
    if (!named) continue;
    if (socket_at(l.path) != l.id) return true;
  }
  return false;
}

void SocketMasks::settle() {
  for (const auto& l : listed_) {
    std::string root;
    for (const auto& w : writable_) {
      if (strictly_inside(l.path, w) && w.size() > root.size()) root = w;
    }
    if (root.empty()) continue;
    // bwrap's mount point: an empty regular file, not writable (it makes them 0444), ours,
    // made since the listing, where the socket was.
    struct statx st {};
    if (!look(l.path, st) || !S_ISREG(st.stx_mode) || st.stx_size != 0 || (st.stx_mode & 0222) != 0 ||
        !ours_since(st, listed_at_)) {
      continue;
    }
    if (::unlink(l.path.c_str()) < 0) continue;
    // The directories bwrap made on the way, when the socket's went too: empty, ours, born
    // since (only where the file system keeps a birth time: a directory's change time moves
    // with its entries).
    for (std::string dir = parent_dir(l.path); strictly_inside(dir, root); dir = parent_dir(dir)) {
      if (!look(dir, st) || !S_ISDIR(st.stx_mode) || !(st.stx_mask & STATX_BTIME) || !ours_since(st, listed_at_) ||
          ::rmdir(dir.c_str()) < 0) {
        break;
      }
    }
  }
}

}  // namespace dshpty::shell
