// The shell backend's two lingering paths (docs/outlive.md): a session spawned with
// "linger" runs under a local `dshpty-supervisor --stdio` (the far side of a remote
// session, one socketpair away) that outlives this host; a spawn with "attach" takes such
// a session over through its rendezvous socket. Both are a StreamChannel, so the session
// above is the one a remote session runs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "dshpty/backend.hpp"
#include "dshpty/shell.hpp"
#include "shell_session.hpp"

namespace dshpty::shell {

// "linger": nullopt when absent, else 0..604800 (decimal digits only). INVALID_ARGUMENT
// naming the option otherwise.
Result<std::uint32_t> parse_linger(const std::map<std::string, std::string>& options);

// Makes `p` (checked by the backend) a lingering session's start. BACKEND_FAILED for an
// unsafe state directory.
// `env`: the overrides of the shell's environment (the integration's and the config's).
// `limits` (resolved by the host's policy): the helper makes the session's cgroups below
// its own and removes them with the tree, whichever host holds the session then.
Status plan_lingering(StartParams& p, const ShellConfig& config, const SpawnSpec& spec, std::uint32_t seconds,
                      const std::string& term, const std::map<std::string, std::optional<std::string>>& env,
                      const Limits& limits = {});

// The whole start of an attach, from the key: its record read, its owner checked.
// INVALID_ARGUMENT for a malformed key or other options beside it; NO_SESSION when no
// lingering session has that key; FOREIGN_SESSION when it is another owner's.
Result<StartParams> plan_attach(const ShellConfig& config, const SpawnSpec& spec,
                                std::shared_ptr<const bool> host_leaving);

}  // namespace dshpty::shell
