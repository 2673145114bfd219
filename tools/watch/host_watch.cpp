#include "host_watch.hpp"

#include <sys/stat.h>

namespace dshpty::watch {

Status HostWatch::start(const tool::SessionOptions& options, const std::string& supervisor_path) {
  if (!options.watch) return {};
  // The helper's file, for the peer check's walk up the peer's ancestry (an older helper
  // that sets no marks is known by its file).
  linger::FileId helper;
  struct stat st {};
  if (!supervisor_path.empty() && ::stat(supervisor_path.c_str(), &st) == 0) helper = {st.st_dev, st.st_ino, true};
  auto socket = std::make_unique<WatchSocket>(loop_, hub_, helper);
  if (Status listening = socket->listen(options.state_dir.value_or("")); !listening) return listening;
  socket_ = std::move(socket);
  return {};
}

}  // namespace dshpty::watch
