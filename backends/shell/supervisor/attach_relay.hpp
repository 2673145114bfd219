// A far `dshpty-supervisor --stdio` whose host opened with ATTACH instead of OPEN: the host
// of a lingering remote session reconnecting over a new transport (docs/outlive.md, "Links
// that reconnect"). The transport started this program afresh; the session lives in the
// lingering helper it left behind, reached through its rendezvous socket in this machine's
// state directory. The relay hands the host's HELLO and ATTACH to that socket (the helper
// checks the peer and the token as for any attach), then copies bytes both ways until
// either side ends. When no session has that key any more, the host hears why (its
// tombstone's words) in an ERROR of code 6.
#pragma once

#include <string>

namespace dshpty::shell {

// `state_dir`: the helper's --state-dir ("" for the default); `key` from the ATTACH;
// `first_bytes`: the host's frames so far (HELLO, ATTACH, anything after), re-encoded.
// The host already has this program's WELCOME: the lingering helper's own is dropped.
// Blocks until the relay ends; the exit status.
int run_attach_relay(const std::string& state_dir, const std::string& key, std::string first_bytes);

}  // namespace dshpty::shell
