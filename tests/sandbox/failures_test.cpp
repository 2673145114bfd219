// A confined spawn that cannot be confined fails before anything starts, naming the mode
// and the cause, and leaves nothing behind; it never runs unconfined instead.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>

#include "sandbox/sandbox_paths.hpp"
#include "sandbox_support.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

void check_fails(ShellFixture& fx, const Spawned& s, Code code, std::initializer_list<const char*> words) {
  REQUIRE_FALSE(s.session);
  REQUIRE(s.error);
  CHECK(s.error->code == code);
  for (const char* w : words) CHECK_MESSAGE(contains(describe(s.error), w), describe(s.error));
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  CHECK(zombie_children().empty());
}

SpawnRequest request_in(const std::optional<std::string>& cwd,
                        std::map<std::string, std::string> options = {}) {
  SpawnRequest r;
  r.cwd = cwd;
  r.options = std::move(options);
  return r;
}

}  // namespace

TEST_CASE("an unknown mode or network value is INVALID_ARGUMENT") {
  ScratchDir scratch;
  ShellFixture fx;
  auto s = fx.spawn(fx.config(), request_in(scratch.path(), {{"sandbox", "strict"}}));
  check_fails(fx, s, Code::INVALID_ARGUMENT, {"unknown sandbox mode \"strict\"", "workspace-write"});
  s = fx.spawn(fx.config(), request_in(scratch.path(), {{"sandbox", "read-only"}, {"network", "maybe"}}));
  check_fails(fx, s, Code::INVALID_ARGUMENT, {"network", "on or off"});
  // network=off without a sandbox would be weaker than asked.
  s = fx.spawn(fx.config(), request_in(scratch.path(), {{"network", "off"}}));
  check_fails(fx, s, Code::INVALID_ARGUMENT, {"network=off", "confined"});
}

TEST_CASE("workspace-write without a cwd, or with one that is missing or not a directory") {
  ScratchDir scratch;
  ShellFixture fx;
  auto config = sandbox_config(fx, SandboxMode::workspace_write);
  auto s = fx.spawn(config, request_in(std::nullopt));
  check_fails(fx, s, Code::BACKEND_FAILED, {"sandbox workspace-write", "working directory"});
  s = fx.spawn(config, request_in(scratch.path() + "/missing"));
  check_fails(fx, s, Code::BACKEND_FAILED, {"sandbox workspace-write", "missing", "No such file"});
  const std::string file = scratch.path() + "/file";
  { std::ofstream(file) << "x"; }
  s = fx.spawn(config, request_in(file));
  check_fails(fx, s, Code::BACKEND_FAILED, {"sandbox workspace-write", "not a directory"});
  config.writable_roots = {scratch.path() + "/no-such-root"};
  s = fx.spawn(config, request_in(scratch.path()));
  check_fails(fx, s, Code::BACKEND_FAILED, {"sandbox workspace-write", "writable root", "no-such-root"});
}

TEST_CASE("bwrap missing: the configured path, or none on PATH") {
  ScratchDir scratch;
  ShellFixture fx;
  auto config = sandbox_config(fx, SandboxMode::read_only);
  config.bwrap_path = scratch.path() + "/no-bwrap";
  auto s = fx.spawn(config, request_in(scratch.path()));
  check_fails(fx, s, Code::BACKEND_FAILED, {"sandbox read-only", "bubblewrap", "no-bwrap"});

  const char* old_path = std::getenv("PATH");
  std::string saved = old_path ? old_path : "";
  ::setenv("PATH", scratch.path().c_str(), 1);
  s = fx.spawn(sandbox_config(fx, SandboxMode::workspace_write), request_in(scratch.path()));
  ::setenv("PATH", saved.c_str(), 1);
  check_fails(fx, s, Code::BACKEND_FAILED, {"sandbox workspace-write", "not installed"});
}

TEST_CASE("a sandbox that cannot be built (namespaces refused) fails with bwrap's words") {
  // A stand-in for bwrap on a kernel that refuses the namespaces: it says so and exits 1,
  // as bwrap does, before running anything.
  ScratchDir scratch;
  const std::string fake = scratch.path() + "/bwrap";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n";
  }
  ::chmod(fake.c_str(), 0755);
  ShellFixture fx;
  auto config = sandbox_config(fx, SandboxMode::read_only);
  config.bwrap_path = fake;
  auto s = fx.spawn(config, request_in(scratch.path()));
  check_fails(fx, s, Code::BACKEND_FAILED,
              {"sandbox read-only", "could not start the session", "exit status 1",
               "No permissions to create new namespace"});
}

TEST_CASE("sandbox none is today's unconfined session") {
  ScratchDir scratch;
  ShellFixture fx;
  auto s = fx.spawn(fx.config(), request_in(scratch.path(), {{"sandbox", "none"}, {"network", "on"}}));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, "echo x > " + scratch.path() + "/f && echo WROTE");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "WROTE"), show(r));
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("fail closed: a misspelt option or a mode in other letters never runs unconfined") {
  ScratchDir scratch;
  ShellFixture fx;
  // "sandbx": an unknown option name is refused, naming it, before anything starts.
  auto s = fx.spawn(fx.config(), request_in(scratch.path(), {{"sandbx", "read-only"}}));
  check_fails(fx, s, Code::INVALID_ARGUMENT, {"unknown shell option \"sandbx\"", "sandbox"});
  for (const char* mode : {"Read-Only", "readonly", "read_only", "workspace", ""}) {
    CAPTURE(mode);
    s = fx.spawn(fx.config(), request_in(scratch.path(), {{"sandbox", mode}}));
    check_fails(fx, s, Code::INVALID_ARGUMENT, {"unknown sandbox mode"});
  }
  for (const char* network : {"OFF", "no", "false", ""}) {
    CAPTURE(network);
    s = fx.spawn(fx.config(), request_in(scratch.path(), {{"sandbox", "read-only"}, {"network", network}}));
    check_fails(fx, s, Code::INVALID_ARGUMENT, {"\"network\" must be on or off"});
  }
}

TEST_CASE("mount paths are resolved on the host: the host's links followed, planted ones refused") {
  ScratchDir scratch;
  const std::string root = scratch.sub("root");
  const std::string elsewhere = scratch.sub("elsewhere");
  const std::string link_outside = scratch.path() + "/link-to-root";  // outside any root
  REQUIRE(::symlink(root.c_str(), link_outside.c_str()) == 0);
  REQUIRE(::symlink(elsewhere.c_str(), (root + "/planted").c_str()) == 0);
  ::mkdir((root + "/real").c_str(), 0755);
  const std::vector<std::string> roots = {root};

  auto followed = shell::resolve_unplanted(link_outside + "/real/../real", roots);
  REQUIRE_MESSAGE(followed, describe(followed.error()));
  CHECK(*followed == root + "/real");
  auto planted = shell::resolve_unplanted(root + "/planted/x", roots);
  REQUIRE_FALSE(planted);
  CHECK(planted.error()->code == Code::BACKEND_FAILED);
  CHECK(contains(planted.error()->message, root + "/planted is a symbolic link inside the writable root " + root));
  // The same link is the host's own when no writable root holds it.
  auto no_roots = shell::resolve_unplanted(root + "/planted", {});
  REQUIRE(no_roots);
  CHECK(*no_roots == elsewhere);
  auto missing = shell::resolve_unplanted(root + "/missing", roots);
  REQUIRE_FALSE(missing);
  CHECK(missing.error()->sys_errno == ENOENT);

  // An allowed socket reached through the planted link is refused before anything starts.
  ShellFixture fx;
  auto config = sandbox_config(fx, SandboxMode::workspace_write);
  config.allow_sockets = {root + "/planted/agent.sock"};
  auto s = fx.spawn(config, request_in(root));
  check_fails(fx, s, Code::BACKEND_FAILED, {"sandbox workspace-write", "allowed socket", "planted is a symbolic link"});
}
