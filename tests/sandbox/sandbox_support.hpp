// Shared by the sandbox suite: whether this machine can run a confined session at all
// (else the whole program is reported skipped, with the reason, through Meson's exit code
// 77), scratch directories outside /tmp (the sandbox's /tmp is private) removed at the end,
// and a loopback listener on the host.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "dshpty/shell.hpp"
#include "../shell/fixture.hpp"

namespace dshpty::test {

// Empty when bubblewrap runs here with the flags the backend uses; else why not.
std::string sandbox_unavailable();

// A config that confines every spawn in `mode` (network off unless the spawn says).
ShellConfig sandbox_config(const ShellFixture& fx, SandboxMode mode);

// A fresh directory under `parent` (default: the build tree, or /var/tmp when that is
// under /tmp), removed with
// everything in it when this goes.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& parent = "");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const;  // makes path()/name, returns it

 private:
  std::string path_;
};

// A TCP listener on 127.0.0.1 of the host's network namespace (CLOEXEC; closed at the end).
class LoopbackListener {
 public:
  LoopbackListener();
  ~LoopbackListener();
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

bool contains(const std::string& hay, const std::string& needle);

// A spawn in `cwd` with these options.
SpawnRequest in_dir(const std::string& cwd, std::map<std::string, std::string> options = {});

// A command's output and exit status (-1: none), for the probes that are ordinary commands.
struct Ran {
  std::string output;
  int exit_code = -1;
};
Ran run(ShellFixture& fx, BackendSession& s, const std::string& command);

// Every probe ends at the shell's prompt; silence must not end a send early on a loaded
// machine (a probe that waits for an answer is silent while it waits).
ShellConfig patient(ShellConfig config);

// The marked processes still alive, one "pid state comm (ppid N)" each: empty when none.
std::string left_behind(const std::string& marker);

}  // namespace dshpty::test
