// The recordings' directory held by a descriptor from the host's start: every recording is
// created relative to it, so the path being renamed, or swapped for a symbolic link to
// somewhere else, later changes nothing of where recordings go (nor what the sandbox masks).
#pragma once

#include <memory>
#include <string>

#include "dshpty/result.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::shell::record {

class RecordDir {
 public:
  RecordDir() = default;
  // O_PATH|O_DIRECTORY|O_CLOEXEC on `path`, once. An empty path: no directory (recording off).
  // A path that is no directory is kept as the error a recorded spawn then reports.
  explicit RecordDir(const std::string& path);

  bool configured() const { return !path_.empty(); }
  // The descriptor to openat() against; an error when it could not be opened at start.
  Result<int> fd() const;
  // Where the directory is now (its descriptor's path: a rename followed, a link swapped in
  // at the old path ignored); empty when it is gone or was never opened.
  std::string where_now() const;
  const std::string& configured_path() const { return path_; }

 private:
  std::string path_;
  std::shared_ptr<proc::UniqueFd> fd_;  // shared: the backend's copies hold one descriptor
  int open_errno_ = 0;
};

}  // namespace dshpty::shell::record
