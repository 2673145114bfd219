// The local shell backend (type "shell"): an interactive bash, zsh or fish on a PTY, its
// whole process tree captured by a per-session supervisor helper (a subreaper), watched
// only through fds on the host's loop. Its behaviour: docs/shell-backend.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/backend.hpp"

struct ev_loop;

namespace dshpty {

// How a session is confined (docs/shell-backend.md, "Confined sessions"). Fixed for the
// session's life; a confined spawn never falls back to `none`.
enum class SandboxMode {
  none,             // the host's file system and network (spawn option "none")
  read_only,        // everything read-only, a private /tmp ("read-only")
  workspace_write,  // read-only but the spawn's cwd and writable_roots ("workspace-write")
};

struct ShellConfig {
  // The shell when a spawn names none (spawn option "shell"): bash, zsh or fish (from
  // PATH), or an absolute path whose name is one of them. Each is started with dshpty's
  // shell integration: marks around every prompt that carry a per-session nonce
  // (docs/shell-backend.md, "Marks"), so a send completes exactly at the shell's prompt.
  std::string shell = "bash";
  // The user's startup files (spawn option "rc"): none (the default: only the integration
  // runs, the prompt is "dsh> ") or user (what an interactive shell of its kind reads:
  // ~/.bashrc, ~/.zshrc, config.fish; the integration then wraps whatever prompt they set).
  enum class StartupFiles { none, user };
  StartupFiles rc = StartupFiles::none;
  // Shell history (spawn option "history"): private (in memory, never read or written),
  // off, or an absolute file path. The host user's own history file is never touched.
  std::string history = "private";
  // A raw start instead: the shell and its arguments as given (argv[0] is the path
  // executed), with no integration: no marks, so a send completes at a prompt only by the
  // stdin probe (and the spawn when the shell is first seen reading its terminal). Empty:
  // `shell` with its integration.
  std::vector<std::string> argv;
  // Working directory when the spawn request has none; unset: the host's cwd.
  std::optional<std::string> cwd;
  unsigned rows = 40;
  unsigned cols = 160;
  // What the shell is told its terminal is: dumb (TERM=dumb: line-mode output, today's
  // default) or xterm (TERM=xterm-256color: full-screen programs draw, keys follow their
  // modes). Either way every byte feeds the session's emulator (screen reads, keys).
  enum class Terminal { dumb, xterm };
  Terminal terminal = Terminal::dumb;
  // Applied after the inherited environment is filtered and the controlled variables are
  // set: a value sets, nullopt unsets. What is inherited (docs/security.md, "Environment"):
  // a confined session only PATH, HOME, USER, LOGNAME, LANG, LC_*, TERM, TZ, TMPDIR and
  // SHELL; an unconfined one all but the names and values that look like secrets.
  std::map<std::string, std::optional<std::string>> env;
  // Host variables passed by name whatever the rules above say (the operator's --env NAME).
  std::vector<std::string> env_pass;
  std::chrono::milliseconds startup_timeout{10'000};  // until the first prompt
  std::chrono::milliseconds close_grace{500};         // HUP/TERM, then SIGKILL
  std::chrono::milliseconds drain_timeout{1'000};     // master drained to EIO at close
  // The helper's path. Empty: $DSHPTY_SUPERVISOR, else the installed libexec path.
  std::string supervisor_path;

  // Confinement, through bubblewrap. `sandbox` applies when a spawn names no mode;
  // `sandbox_network` when a confined spawn names no network (false: a private network
  // namespace, loopback only). `writable_roots` are writable besides the workspace in
  // workspace-write. `bwrap_path` empty: `bwrap` from the host's PATH. The helper must be
  // outside /tmp (which a sandbox replaces).
  SandboxMode sandbox = SandboxMode::none;
  bool sandbox_network = false;
  std::vector<std::string> writable_roots;
  // The operator's floor (docs/security.md, "The operator's policy"): a spawn asking for
  // less confinement than `sandbox_floor` (none < workspace-write < read-only), or for the
  // network when `network_floor` is true ("off"), is INVALID_ARGUMENT, never clamped; a
  // default below the floor is raised to it. `workspaces`: the directories a confined
  // session's cwd must lie in (empty: anywhere but / and $HOME); a confined cwd reached
  // through a symbolic link is refused either way.
  SandboxMode sandbox_floor = SandboxMode::none;
  bool network_floor = false;
  std::vector<std::string> workspaces;
  std::string bwrap_path;
  // Host unix sockets a confined session may reach, bound in at their canonical paths
  // (everything else of the host's is hidden: /run and $XDG_RUNTIME_DIR are empty inside,
  // other path sockets covered). Each must be a socket when a session starts.
  std::vector<std::string> allow_sockets;
  // Read-only inside the writable roots of workspace-write, besides `.git` (always: git
  // may commit, its config, hooks and hooksPath stay read-only) and the defaults `.husky`,
  // `.pre-commit-config.yaml`, `.envrc`, `.vscode`, `.idea`: a relative path is taken in
  // each root, an absolute one where it lies in a root; "!NAME" leaves a default out;
  // ".git" makes all of it read-only. A protected path that is a symbolic link fails the
  // spawn (docs/security.md).
  std::vector<std::string> protected_paths;
  // The size of each tmpfs a confined session may fill (/tmp, /dev/shm, the masked /run
  // and $XDG_RUNTIME_DIR). 0: the smaller of 1 GiB and a tenth of the host's RAM. A setuid
  // bwrap refuses sizes: there they are unbounded (docs/security.md).
  std::size_t sandbox_tmpfs_bytes = 0;

  // Per-session limits (docs/security.md, "Resource limits"), enforced by a cgroup of the
  // session's own below the host's. `limits`: what a spawn that sets none of a kind gets;
  // `limit_ceilings`: the most a spawn may ask (above one: INVALID_ARGUMENT naming the
  // field, never clamped). A ceiling with no default is the default, and a default above
  // its ceiling is lowered to it. A spawn with any limit that no cgroup can carry fails
  // BACKEND_FAILED naming the cause: it never runs unlimited. Ranges: pids 1..4194304,
  // memory from 1 MiB, cpu 0.01..4096 CPUs.
  Limits limits;
  Limits limit_ceilings;

  // Terminal layer.
  std::size_t scrollback_lines = 10'000;
  std::size_t scrollback_bytes = 4u << 20;
  std::size_t page_bytes = 256u << 10;      // a read page's bound
  // A send's output bound (its first third and newest two thirds kept) and its viewport's
  // cap when the request names none.
  std::size_t viewport_bytes = 256u << 10;
  std::chrono::milliseconds idle_silence{3'000};
  std::chrono::milliseconds send_timeout{30'000};

  // Sessions that outlive their host (dshpty/linger.hpp, docs/outlive.md): where their
  // rendezvous lives ("" : $XDG_RUNTIME_DIR/dshpty, else /tmp/dshpty-UID), and how much
  // output a lingering session keeps for the next host (at least 1 MiB + 32 KiB).
  std::string state_dir;
  std::size_t linger_ring_bytes = 4u << 20;

  // Whether people may watch the sessions (docs/watch.md): false makes every observe() of
  // this backend's sessions fail, whatever face asks (the tools' --no-watch also opens no
  // watch socket and no web page).
  bool watchable = true;
  // Recordings (docs/watch.md, "Recordings"): with a directory, every session is recorded
  // (spawn option "record" "false" opts one out; "true" without a directory is
  // INVALID_ARGUMENT) as an asciicast v2 file created inside it (never through a symbolic
  // link, never over an existing file), named by the owner's label, the session id and the
  // start time. A file reaching `record_max_bytes` ends with a marker saying it was cut. A
  // write that fails (a full disk) ends the recording, never the session
  // (SessionSnapshot::recording says why). The directory must exist at each spawn.
  std::string record_dir;
  std::size_t record_max_bytes = std::size_t{64} << 20;

  // Raw PTY bytes as they arrive, before the terminal layer; for tests and tools. Optional.
  std::function<void(std::string_view session_id, std::string_view bytes)> on_raw_output;
};

// A shell backend on `loop` (which must outlive it and its sessions). Per-spawn options
// (SpawnRequest::options): "shell", "rc", "history" (as the config fields above); "rows",
// "cols" (decimal, 1..4096); "terminal" ("dumb" or "xterm"); "sandbox" ("none",
// "read-only", "workspace-write"); "network" ("on", "off"; "off" needs a confined mode);
// "linger" (decimal seconds 0..604800; not with a sandbox); "record" ("true", "false":
// docs/watch.md); "attach" (a lingering session's
// key, alone: dshpty/linger.hpp); any other name or value is INVALID_ARGUMENT. A shell
// missing at run time fails the spawn with BACKEND_FAILED naming it. Configuration
// errors (a missing shell, cwd, helper or bwrap, namespaces refused, workspace-write without
// a cwd) do not fail this call: each spawn fails with BACKEND_FAILED naming the cause (and
// the mode) before anything runs. A confined session's pids (SessionSnapshot::pid,
// signals) are the host's.
std::shared_ptr<Backend> make_shell_backend(struct ev_loop* loop, ShellConfig config = {});

// Checks spawn options "shell", "rc" and "history" as a spawn would (for a tool's start-up
// flags): INVALID_ARGUMENT naming the option and the valid choices.
Status check_shell_options(const std::map<std::string, std::string>& options);

}  // namespace dshpty
