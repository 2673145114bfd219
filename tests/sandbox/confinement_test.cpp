// What a confined session may touch: the file system (read-only but the workspace and the
// extra roots; a private /tmp) and the network (a private namespace unless network=on).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "sandbox_support.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("workspace-write: the workspace and extra roots are writable, the rest read-only") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string extra = scratch.sub("extra");
  const std::string outside = scratch.sub("outside");
  ShellFixture fx;
  auto config = sandbox_config(fx, SandboxMode::workspace_write);
  config.writable_roots = {extra};
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));

  auto r = fx.send(*s.session, "echo in > " + ws + "/a && echo WROTE-A");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "WROTE-A"), show(r));
  CHECK(r->exit_code == 0);
  r = fx.send(*s.session, "echo in > " + extra + "/b && echo WROTE-B");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "WROTE-B"), show(r));
  r = fx.send(*s.session, "echo out > " + outside + "/c");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "Read-only file system"), show(r));
  CHECK(r->exit_code == 1);
  r = fx.send(*s.session, "touch /etc/dshpty-sandbox-probe");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "Read-only file system"), show(r));
  // The shell's cwd is the workspace, as the host reports it.
  r = fx.send(*s.session, "cd " + ws);
  REQUIRE_MESSAGE(r, show(r));
  CHECK(r->cwd == ws);

  CHECK(fx.close(*s.session).ok());
  CHECK(exists(ws + "/a"));
  CHECK(exists(extra + "/b"));
  CHECK_FALSE(exists(outside + "/c"));
  CHECK_FALSE(exists("/etc/dshpty-sandbox-probe"));
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  CHECK(zombie_children().empty());
}

TEST_CASE("read-only: nothing outside the private /tmp is writable, the host's /tmp unseen") {
  ScratchDir scratch;
  const std::string dir = scratch.sub("cwd");
  ScratchDir host_tmp("/tmp");
  { std::ofstream(host_tmp.path() + "/host-file") << "x"; }
  ShellFixture fx;
  auto s = fx.spawn(sandbox_config(fx, SandboxMode::read_only), in_dir(dir));
  REQUIRE_MESSAGE(s.session, describe(s.error));

  auto r = fx.send(*s.session, "echo x > " + dir + "/f");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "Read-only file system"), show(r));
  r = fx.send(*s.session, "test -e " + host_tmp.path() + "/host-file && echo SEEN || echo UNSEEN");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "\nUNSEEN"), show(r));
  r = fx.send(*s.session, "echo t > /tmp/inside && cat /tmp/inside && echo TMP-OK");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "TMP-OK"), show(r));
  CHECK(fx.close(*s.session).ok());
  CHECK_FALSE(exists(dir + "/f"));
  CHECK_FALSE(exists("/tmp/inside"));
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("workspace-write with a workspace under /tmp: writable, seen by the host") {
  ScratchDir ws("/tmp");
  ShellFixture fx;
  auto s = fx.spawn(sandbox_config(fx, SandboxMode::workspace_write), in_dir(ws.path()));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, "echo in > " + ws.path() + "/a && echo WROTE");
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(contains(r->viewport, "WROTE"), show(r));
  CHECK(fx.close(*s.session).ok());
  CHECK(exists(ws.path() + "/a"));
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("network off: the host's loopback listener is unreachable; network=on reaches it") {
  LoopbackListener listener;
  const std::string connect = "(exec 3<>/dev/tcp/127.0.0.1/" + std::to_string(listener.port()) +
                              ") 2>/dev/null && echo REACHED || echo UNREACHABLE";
  ScratchDir scratch;
  const std::string dir = scratch.sub("cwd");
  for (const char* network : {"off", "on"}) {
    CAPTURE(network);
    ShellFixture fx;
    auto s = fx.spawn(sandbox_config(fx, SandboxMode::read_only),
                      in_dir(dir, {{"network", network}}));
    REQUIRE_MESSAGE(s.session, describe(s.error));
    auto r = fx.send(*s.session, connect);
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(contains(r->viewport, std::string(network) == "on" ? "\nREACHED" : "\nUNREACHABLE"),
                  show(r));
    CHECK(fx.close(*s.session).ok());
    CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
  }
}
