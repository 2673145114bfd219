// The operator's policy (docs/security.md, "The operator's policy"): floors the spawn cannot
// go below (refused, never clamped), defaults a spawn that names nothing takes, and where a
// confined session's cwd may be. Each refusal beside the same spawn that the policy allows.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>

#include "sandbox_support.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

// The spawn's error message, or "" when it started (then closed at once).
std::string refusal(ShellFixture& fx, const ShellConfig& config, const SpawnRequest& request,
                    Code expected = Code::INVALID_ARGUMENT) {
  auto s = fx.spawn(config, request);
  if (s.session) {
    CHECK(fx.close(*s.session).ok());
    return "";
  }
  CHECK_MESSAGE(s.error->code == expected, describe(s.error));
  return s.error->message;
}

}  // namespace

TEST_CASE("a sandbox floor refuses a spawn below it, and raises a default below it") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  ShellFixture fx;
  ShellConfig config = fx.config();
  config.sandbox_floor = SandboxMode::workspace_write;  // the default stays none: raised
  CHECK(refusal(fx, config, in_dir(ws, {{"sandbox", "none"}})) ==
        "sandbox \"none\" is below the operator's floor, workspace-write (allowed: workspace-write, read-only)");
  // Nothing named: the floor. read-only is above it.
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto confinement = s.session->confinement();
  REQUIRE(confinement);
  CHECK(confinement->mode == "workspace-write");
  CHECK_FALSE(confinement->network);
  CHECK(confinement->writable_roots == std::vector<std::string>{ws});
  CHECK(fx.close(*s.session).ok());
  CHECK(refusal(fx, config, in_dir(ws, {{"sandbox", "read-only"}})) == "");

  config.sandbox_floor = SandboxMode::read_only;
  CHECK(refusal(fx, config, in_dir(ws, {{"sandbox", "workspace-write"}})) ==
        "sandbox \"workspace-write\" is below the operator's floor, read-only (allowed: read-only)");
  // The positive control: no floor, the same spawn runs unconfined.
  config.sandbox_floor = SandboxMode::none;
  s = fx.spawn(config, in_dir(ws, {{"sandbox", "none"}}));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK_FALSE(s.session->confinement());
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("a network floor refuses the network, confined or not") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  ShellFixture fx;
  ShellConfig config = sandbox_config(fx, SandboxMode::workspace_write);
  config.sandbox_network = true;  // a default of on is lowered by the floor
  config.network_floor = true;
  CHECK(refusal(fx, config, in_dir(ws, {{"network", "on"}})) ==
        "network \"on\" is below the operator's floor: the network is off");
  CHECK(contains(refusal(fx, config, in_dir(ws, {{"sandbox", "none"}})), "below the operator's floor (network off)"));
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK_FALSE(s.session->confinement()->network);
  CHECK(fx.close(*s.session).ok());
  config.network_floor = false;  // the positive control
  s = fx.spawn(config, in_dir(ws, {{"network", "on"}}));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(s.session->confinement()->network);
  CHECK(fx.close(*s.session).ok());
}

TEST_CASE("a confined cwd: never /, $HOME, a symbolic link on the way, or outside the workspaces") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string other = scratch.sub("other");
  const std::string home = scratch.sub("home");
  REQUIRE(::symlink(other.c_str(), (ws + "/link").c_str()) == 0);
  const char* old_home = std::getenv("HOME");
  const std::string saved_home = old_home ? old_home : "";
  ::setenv("HOME", home.c_str(), 1);
  ShellFixture fx;
  ShellConfig config = sandbox_config(fx, SandboxMode::workspace_write);
  CHECK(contains(refusal(fx, config, in_dir("/")), "a confined session's cwd may not be /"));
  CHECK(contains(refusal(fx, config, in_dir(home)), "may not be the home directory"));
  CHECK(contains(refusal(fx, config, in_dir(home + "/../home")), "may not be the home directory"));
  CHECK(contains(refusal(fx, config, in_dir(ws + "/link")), "may not be reached through a symbolic link (it leads to " + other));
  CHECK(contains(refusal(fx, config, in_dir(ws + "/link/.")), "symbolic link"));
  // read-only too: a confined session is held to the same cwd rules.
  CHECK(contains(refusal(fx, sandbox_config(fx, SandboxMode::read_only), in_dir("/")), "may not be /"));
  config.workspaces = {ws};
  CHECK(contains(refusal(fx, config, in_dir(other)), "outside the operator's workspaces (" + ws + ")"));
  // The positive controls: inside the workspace, and unconfined anywhere.
  ::mkdir((ws + "/sub").c_str(), 0755);
  CHECK(refusal(fx, config, in_dir(ws + "/sub")) == "");
  CHECK(refusal(fx, fx.config(), in_dir("/")) == "");
  CHECK(refusal(fx, fx.config(), in_dir(ws + "/link")) == "");
  if (old_home) ::setenv("HOME", saved_home.c_str(), 1); else ::unsetenv("HOME");
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("a confined session inherits the allow-list and what the operator passes; unconfined loses secrets") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::map<std::string, std::string> planted = {
      {"MYSQL_PWD", "pw1"}, {"DATABASE_URL", "postgres://u:pw2@db/x"}, {"GH_PAT", "pw3"},
      {"CI_JOB_JWT", "pw4"}, {"SENTRY_DSN", "https://k@s.io/1"}, {"HTTPS_PROXY", "http://u:pw5@proxy:3128"},
      {"SLACK_WEBHOOK_URL", "https://hooks/x"}, {"COOKIE", "pw6"}, {"DOCKER_AUTH_CONFIG", "pw7"},
      {"PLAIN_SETTING", "visible"}, {"OPERATOR_CHOICE", "chosen"}, {"GIT_AUTHOR_NAME", "Ada"}};
  for (const auto& [k, v] : planted) ::setenv(k.c_str(), v.c_str(), 1);
  const std::string show = "env | grep -E '^(MYSQL_PWD|DATABASE_URL|GH_PAT|CI_JOB_JWT|SENTRY_DSN|HTTPS_PROXY|"
                           "SLACK_WEBHOOK_URL|COOKIE|DOCKER_AUTH_CONFIG|PLAIN_SETTING|OPERATOR_CHOICE|"
                           "GIT_AUTHOR_NAME|PATH|HOME)=' | cut -d= -f1 | sort | tr '\\n' ' '; echo";
  ShellFixture fx;
  ShellConfig config = sandbox_config(fx, SandboxMode::workspace_write);
  config.env_pass = {"OPERATOR_CHOICE"};
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = fx.send(*s.session, show);
  REQUIRE(r);
  CHECK_MESSAGE(contains(r->viewport, "\nHOME OPERATOR_CHOICE PATH\n"), r->viewport);
  CHECK(fx.close(*s.session).ok());
  // Unconfined: everything but the secrets.
  s = fx.spawn(fx.config(), in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  r = fx.send(*s.session, show);
  REQUIRE(r);
  CHECK_MESSAGE(contains(r->viewport, "\nGIT_AUTHOR_NAME HOME OPERATOR_CHOICE PATH PLAIN_SETTING\n"), r->viewport);
  CHECK(fx.close(*s.session).ok());
  for (const auto& [k, v] : planted) ::unsetenv(k.c_str());
}

TEST_CASE("a confined cwd inside a repository keeps the repository's protections") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  REQUIRE(std::system(("git init -q " + ws + " && git -C " + ws + " config core.hooksPath tools/hooks && mkdir -p " +
                       ws + "/tools/hooks " + ws + "/.vscode && git init -q --bare " + ws + "/bare.git")
                          .c_str()) == 0);
  ShellFixture fx;
  ShellConfig config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  // Inside the git directory, a protected path, or a bare repository: refused.
  for (const std::string& inside : {ws + "/.git", ws + "/.git/hooks", ws + "/.vscode", ws + "/bare.git",
                                    ws + "/bare.git/refs"}) {
    CAPTURE(inside);
    CHECK(contains(refusal(fx, config, in_dir(inside)), "may not be inside a git directory or a protected path"));
  }
  // A subdirectory: the repository's core.hooksPath (taken in its top) stays read-only.
  auto s = fx.spawn(config, in_dir(ws + "/tools"));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = run(fx, *s.session, "echo 'echo pwned' > hooks/pre-commit");
  CHECK_MESSAGE(contains(r.output, "Read-only file system"), r.output);
  CHECK(run(fx, *s.session, "echo x > other-file").exit_code == 0);  // the rest is writable
  CHECK(fx.close(*s.session).ok());
  struct stat st {};
  CHECK(::stat((ws + "/tools/hooks/pre-commit").c_str(), &st) < 0);
  CHECK(::stat((ws + "/tools/other-file").c_str(), &st) == 0);
  // The positive control: unconfined, the same cwd and write succeed.
  CHECK(refusal(fx, fx.config(), in_dir(ws + "/.git")) == "");
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}
