// The shell integration, helper side: writes the dialect's scripts (carried inside this
// binary, dialect/integration/) where only this helper's session can read them, and points
// the shell at them (dialect/dialect.hpp). bash and fish read a sealed memfd of this helper
// through /proc/<helper>/fd/N, so nothing is ever written to a file system and nothing is
// left behind; zsh needs a directory (ZDOTDIR): a fresh 0700 one under $TMPDIR (or /tmp)
// that zsh removes once it has read it, and this helper at its exit if it had not.
#pragma once

namespace dshpty::supervisor {

// When the environment holds DSHPTY_NONCE (the host asked for the integration), prepares
// it for the shell named by argv[0]'s base name: replaces the placeholder in argv's
// entries (in place: new strings) and sets ZDOTDIR for zsh. The nonce itself is taken out
// of the environment (and wiped from this process's) and reaches the shell through a pipe
// its integration reads once (DSHPTY_NONCE_FROM names it). Returns false with errno set
// when it could not; true (doing nothing) without DSHPTY_NONCE or for another shell.
bool install_integration(char** argv);

// Removes what install_integration left on a file system, if it still exists.
void remove_integration();

// The pipe every dialect's integration reads the nonce from through /proc/<helper>/fd/N
// (after bash and fish opened their script the same way), or -1 (no integration). Opening
// those paths needs ptrace access to this helper: it stays dumpable until the shell has
// read the nonce and closed the pipe, the integration's first act (supervisor/main.cpp);
// the fds are closed then.
int integration_nonce_fd();
void close_integration_fds();

}  // namespace dshpty::supervisor
