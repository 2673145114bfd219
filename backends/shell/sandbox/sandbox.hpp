// Confined sessions: a launch plan wrapped in bubblewrap (docs/shell-backend.md,
// "Confined sessions"). The host runs `bwrap FLAGS -- dshpty-supervisor ...` instead of the
// helper; everything is decided and checked here before anything runs, so a spawn that
// cannot be confined fails naming the mode and the cause, and never runs unconfined.
//
// Process layout (host pids, as the host's /proc shows them):
//   host -> bwrap (outer; waits, holds what it inherited until it exits)
//        -> dshpty-supervisor (pid 1 of the new pid namespace, `--as-pid-1`: its init,
//           so every orphan of the session reparents to it, and its death empties the
//           namespace before the outer bwrap can reap it and exit)
//        -> the shell (setsid + TIOCSCTTY: the session leader of the PTY)
// `--new-session` makes the supervisor a session leader without a terminal; the shell's own
// setsid (it is no group leader, so it may) then takes the PTY as its controlling terminal.
//
// Because the outer bwrap keeps every fd it inherited, the PTY slave is not given on its
// 0..2 (the master would then never see EIO while bwrap lives): the host passes the slave
// over the control socket (SCM_RIGHTS) and only the supervisor and the shell hold it.
// bwrap's own stdout and stdin are /dev/null and its stderr a pipe the host reads when the
// sandbox fails to start, to name the cause.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "local/launch_plan.hpp"
#include "sandbox/sandbox_paths.hpp"
#include "sandbox/socket_masks.hpp"
#include "dshpty/result.hpp"
#include "dshpty/session.hpp"
#include "dshpty/shell.hpp"

namespace dshpty::shell {

// A spawn's confinement, resolved from its options and the backend's config.
struct SandboxSpec {
  SandboxMode mode = SandboxMode::none;
  bool network = true;                          // false: a private network namespace
  std::optional<std::string> workspace;         // writable in workspace-write (the cwd)
  std::vector<std::string> writable_roots;      // writable in workspace-write
  std::vector<std::string> protected_entries;   // the defaults and ShellConfig::protected_paths
  std::vector<std::string> allow_sockets;       // ShellConfig::allow_sockets, as given
  std::vector<std::string> workspaces;          // ShellConfig::workspaces: where a cwd may be
  std::map<std::string, std::optional<std::string>> env;  // ShellConfig::env (XDG_RUNTIME_DIR)
  std::string record_dir;                       // ShellConfig::record_dir: masked, every owner's
  std::shared_ptr<const std::string> seccomp_program;     // the backend's filter (BPF)
  std::size_t tmpfs_bytes = 0;                  // each tmpfs's size; 0: unsized (setuid bwrap)
  // --die-with-parent: the host's death SIGKILLs the helper and, with it, the namespace.
  // false for a session with cgroups: its helper ends the tree when its control socket
  // closes, as an unconfined one does, and removes the cgroups, which a SIGKILLed helper
  // would leave behind.
  bool host_death_kills = true;

  // Resolved by check_sandbox, on the host, before the argv is built:
  std::string bwrap;                            // the resolved bwrap path
  bool bwrap_setuid = false;                    // no --disable-userns then (bwrap refuses it)
  std::vector<std::string> masked_dirs;         // empty tmpfs inside: /run, $XDG_RUNTIME_DIR, recordings
  std::shared_ptr<SocketMasks> socket_masks;    // the host's other path sockets: /dev/null, listed at each start
  std::vector<std::string> allowed_sockets;     // canonical, bound back in
  std::vector<ProtectedMount> protected_mounts; // over the writable roots, outer first

  bool confined() const { return mode != SandboxMode::none; }
};

// Every mode, least confined first.
inline constexpr SandboxMode kSandboxModes[] = {SandboxMode::none, SandboxMode::workspace_write,
                                                SandboxMode::read_only};

// "none", "read-only", "workspace-write".
std::string_view sandbox_mode_name(SandboxMode mode);

// What a checked spec confines, as callers see it; nullopt for mode none.
std::optional<Confinement> describe_confinement(const SandboxSpec& spec);
// Protected in every writable root besides `.git`, unless ShellConfig::protected_paths
// names them with a leading "!": what editors, direnv, husky and pre-commit run later.
extern const std::vector<std::string> kDefaultProtectedPaths;

// The spawn's "sandbox" and "network" options over the config's defaults.
// INVALID_ARGUMENT for an unknown mode or network value, or network=off without a
// confined mode (it would be silently weaker than asked), or a "!" entry in
// protected_paths that names no default (`.git` cannot be left out).
Result<SandboxSpec> parse_sandbox_options(const std::map<std::string, std::string>& options,
                                          const ShellConfig& config);

// Checks everything a confined spawn needs before anything runs, and resolves bwrap: the
// operator's rules for the cwd (INVALID_ARGUMENT: "/", $HOME, a symbolic link on the way,
// outside `workspaces`; the host's cwd when the spawn has none),
// `bwrap` found (config path, else PATH), the kernel allowing the namespaces, the workspace
// (`cwd`, required for workspace-write) and the extra roots existing as directories; then
// every mount destination (sandbox/sandbox_paths.hpp): the masks, where the host sockets
// to hide are looked for (they are listed right before bwrap starts), the allowed sockets (each must be a socket), the protected paths. A symbolic link
// planted inside a writable root on the way to any of them is refused.
// BACKEND_FAILED naming the mode and the cause. A no-op for SandboxMode::none.
Status check_sandbox(SandboxSpec& spec, const std::optional<std::string>& cwd,
                     const std::string& configured_bwrap, const std::string& supervisor_path);

// `direct` (the helper's own plan) run inside bwrap per `spec`; the plan's tty then goes
// over the control socket (LaunchPlan::tty_by_message).
LaunchPlan wrap_in_bwrap(const LaunchPlan& direct, const SandboxSpec& spec,
                         const std::optional<std::string>& cwd);

}  // namespace dshpty::shell
