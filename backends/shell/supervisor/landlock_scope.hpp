// Inside a confined session (docs/security.md): the helper puts itself, and so the shell
// and everything it starts, in a Landlock domain scoped against abstract unix sockets, so
// a session with the network on cannot connect to the host's (an X server's
// @/tmp/.X11-unix/X0, a D-Bus bus on unix:abstract=). With the network off the private
// network namespace already hides them. bwrap set no_new_privs before starting the helper,
// which Landlock requires.
#pragma once

namespace dshpty::supervisor {

enum class ScopeResult {
  scoped,       // the domain is in force
  unsupported,  // the kernel's Landlock predates scoping (ABI < 6) or is off: nothing done
  failed,       // the kernel has it and refused: errno says why
};

ScopeResult scope_abstract_unix_sockets();

}  // namespace dshpty::supervisor
