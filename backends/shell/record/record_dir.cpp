#include "record/record_dir.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

namespace dshpty::shell::record {

RecordDir::RecordDir(const std::string& path) : path_(path) {
  if (path_.empty()) return;
  // No O_NOFOLLOW: the operator may name the directory through a link; it is resolved now,
  // once, and never again.
  fd_ = std::make_shared<proc::UniqueFd>(::open(path_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (fd_->get() < 0) {
    open_errno_ = errno;
    fd_.reset();
  }
}

Result<int> RecordDir::fd() const {
  if (fd_) return fd_->get();
  const int err = open_errno_ ? open_errno_ : ENOENT;
  if (err == ENOENT || err == ENOTDIR) {
    return make_error(Code::INVALID_ARGUMENT,
                      "record: the recording directory " + path_ + " does not exist or is no directory", {}, err);
  }
  return make_system_error(Code::BACKEND_FAILED, "record: recording directory " + path_, err);
}

std::string RecordDir::where_now() const {
  if (!fd_) return {};
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd_->get());
  char target[PATH_MAX];
  const ssize_t n = ::readlink(link, target, sizeof target - 1);
  if (n <= 0 || target[0] != '/') return {};
  std::string where(target, static_cast<std::size_t>(n));
  if (where.ends_with(" (deleted)")) return {};
  return where;
}

}  // namespace dshpty::shell::record
