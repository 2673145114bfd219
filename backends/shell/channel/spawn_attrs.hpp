// posix_spawn's attribute and file-action objects, initialised and destroyed together, for
// the two spawns the host makes (the local helper, a remote session's transport).
#pragma once

#include <spawn.h>

namespace dshpty::shell {

struct SpawnAttrs {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnAttrs() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnAttrs() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnAttrs(const SpawnAttrs&) = delete;
  SpawnAttrs& operator=(const SpawnAttrs&) = delete;
};

}  // namespace dshpty::shell
