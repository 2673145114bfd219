// A backend whose sessions may linger (the local shell backend and the remote ones): told
// that its host is leaving, it makes the closes that follow detach lingering sessions
// instead of killing them (detach_lingering_on_close, docs/outlive.md).
#pragma once

#include <memory>

namespace dshpty::shell {

class LeavingBackend {
 public:
  void leave() { *host_leaving_ = true; }

 protected:
  ~LeavingBackend() = default;
  // Shared with every session the backend starts (StartParams::host_leaving).
  std::shared_ptr<bool> host_leaving_ = std::make_shared<bool>(false);
};

}  // namespace dshpty::shell
