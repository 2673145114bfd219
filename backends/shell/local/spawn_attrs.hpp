// posix_spawn's attribute and file-action objects, initialised and destroyed together, for
// the two spawns the host makes (the local helper, a remote session's transport).
#pragma once

#include <signal.h>
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
  // The child starts with every signal at its default, an empty mask, and a session of its
  // own, so the host terminal's job-control signals never reach it.
  void fresh_signals_and_session() {
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSID);
  }
  SpawnAttrs(const SpawnAttrs&) = delete;
  SpawnAttrs& operator=(const SpawnAttrs&) = delete;
};

}  // namespace dshpty::shell
