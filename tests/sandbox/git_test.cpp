// What runs outside later (docs/security.md, "Protected paths"): in workspace-write a
// confined session may commit with the real git, while what git, husky, pre-commit, direnv
// and editors run later on the host stays read-only: .git's config, hooks, info/, the files
// config includes and the directory core.hooksPath names, and the default protected paths.
// Each refusal is beside its positive control: the same command in an unconfined session
// on an identical repository.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "sandbox/sandbox_git.hpp"
#include "sandbox_support.hpp"

using namespace dshpty;
using namespace dshpty::test;
using dshpty::shell::GitConfigRefs;
using dshpty::shell::read_git_config;

namespace {

int sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

std::string host_output(const std::string& command) {
  std::string out;
  if (std::FILE* p = ::popen(command.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

const std::string kCommit = "git -c user.name=t -c user.email=t@example.invalid commit -q -m";

// A repository as husky, pre-commit, direnv and two editors leave it, with config that
// includes a file in the repository (present) and one that is missing, and a hooks
// directory in the worktree.
void make_repo(const std::string& ws) {
  REQUIRE(sh("git init -q " + ws) == 0);
  write_file(ws + "/.git/config", read_file(ws + "/.git/config") +
                                      "[core]\n\thooksPath = .husky/_\n"
                                      "[include]\n\tpath = ../repo.gitconfig\n"
                                      "[includeIf \"gitdir:" + ws + "/\"]\n\tpath = ../missing.gitconfig  # a comment\n");
  write_file(ws + "/repo.gitconfig", "[alias]\n\tst = status\n");
  for (const auto& dir : {"/.husky", "/.husky/_", "/.vscode", "/.idea"}) ::mkdir((ws + dir).c_str(), 0755);
  write_file(ws + "/.husky/pre-commit", "npm test\n");
  write_file(ws + "/.husky/_/pre-commit", ". \"$(dirname \"$0\")/../pre-commit\"\n");
  write_file(ws + "/.pre-commit-config.yaml", "repos: []\n");
  write_file(ws + "/.envrc", "export A=1\n");
  write_file(ws + "/.vscode/tasks.json", "{}\n");
  write_file(ws + "/.idea/workspace.xml", "<project/>\n");
  write_file(ws + "/.git/info/exclude", "# exclude\n");
}

// Each write that would run later on the host, and each new file in a protected directory.
const std::vector<std::string> kLaterWrites = {
    "echo x >> .git/hooks/pre-commit",  "echo x >> .git/config",
    "echo x >> .git/info/exclude",      "echo x > .git/info/attributes",
    "echo x >> repo.gitconfig",         "echo x >> missing.gitconfig",
    "echo x >> .husky/_/pre-commit",    "echo x > .husky/_/post-checkout",
    "echo x >> .husky/pre-commit",      "echo x >> .pre-commit-config.yaml",
    "echo x >> .envrc",                 "echo x >> .vscode/tasks.json",
    "echo x > .vscode/settings.json",   "echo x > .idea/x",
};

}  // namespace

TEST_CASE("workspace-write: git commits; what runs later is read-only; an unconfined twin writes it all") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string twin = scratch.sub("twin");
  make_repo(ws);
  make_repo(twin);
  ShellFixture fx;
  auto s = fx.spawn(patient(sandbox_config(fx, SandboxMode::workspace_write)), in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  ShellFixture control_fx;
  auto control = control_fx.spawn(patient(control_fx.config()), in_dir(twin));
  REQUIRE_MESSAGE(control.session, describe(control.error));
  // The missing include was made, empty, so that it could be bound read-only.
  CHECK(exists(ws + "/missing.gitconfig"));

  SUBCASE("git add and commit, seen by the host") {
    // husky's hook runs inside, confined, and finds no npm: bypassed as a user would.
    auto r = run(fx, *s.session, "echo f > f && git add f && " + kCommit + " from-inside --no-verify; echo STATUS=$?");
    CHECK_MESSAGE(contains(r.output, "\nSTATUS=0"), r.output);
    CHECK(host_output("git -C " + ws + " log -1 --format=%s") == "from-inside");
    CHECK(host_output("git -C " + ws + " status --porcelain -- f").empty());
    // Branches, tags, a second commit, a reset: refs, logs, ORIG_HEAD.
    r = run(fx, *s.session, "git branch b1 && git tag t1 && echo g > f && " + kCommit +
                                " second -a --no-verify && git reset -q --soft HEAD~1; echo STATUS=$?");
    CHECK_MESSAGE(contains(r.output, "\nSTATUS=0"), r.output);
    CHECK(host_output("git -C " + ws + " rev-parse t1 b1 ORIG_HEAD 2>/dev/null | wc -l") == "3");
  }
  SUBCASE("what runs later refuses writes (EROFS); the twin takes every one") {
    for (const auto& write : kLaterWrites) {
      CAPTURE(write);
      auto r = run(fx, *s.session, write);
      CHECK_MESSAGE(contains(r.output, "Read-only file system"), r.output);
      CHECK(r.exit_code == 1);
      CHECK(run(control_fx, *control.session, write).exit_code == 0);
    }
    CHECK(read_file(ws + "/.husky/pre-commit") == "npm test\n");
    CHECK(read_file(ws + "/missing.gitconfig").empty());
  }
  SUBCASE("git config refuses; moving or removing the protected parts is EBUSY") {
    auto r = run(fx, *s.session, "git config core.hooksPath /tmp/h; echo STATUS=$?");
    CHECK_MESSAGE(!contains(r.output, "\nSTATUS=0"), r.output);
    CHECK(host_output("git -C " + ws + " config --get core.hooksPath") == ".husky/_");
    CHECK(run(control_fx, *control.session, "git config core.hooksPath /tmp/h").exit_code == 0);
    for (const std::string move : {"mv .git moved-git", "mv .git/hooks .git/hooks-old", "mv .git/config .git/config-old",
                             "rm -f .git/config", "mv .husky husky-old", "mv .vscode vscode-old"}) {
      CAPTURE(move);
      r = run(fx, *s.session, move);
      CHECK_MESSAGE(contains(r.output, "Device or resource busy"), r.output);
      CHECK(r.exit_code == 1);
    }
    // A link from the writable .git to a protected file crosses a mount: refused.
    r = run(fx, *s.session, "ln .git/config .git/config-link");
    CHECK_MESSAGE(contains(r.output, "Invalid cross-device link"), r.output);
    CHECK(run(control_fx, *control.session, "mv .git/hooks .git/hooks-old && mv .git moved-git").exit_code == 0);
  }
  SUBCASE("git -c core.hooksPath is the session's own process, nothing of the host's") {
    auto r = run(fx, *s.session, "mkdir -p own-hooks && printf '#!/bin/sh\\necho OWN-HOOK-RAN\\n' > own-hooks/pre-commit && "
                                 "chmod +x own-hooks/pre-commit && echo h > h && git add h && "
                                 "git -c core.hooksPath=own-hooks -c user.name=t -c user.email=t@example.invalid commit -q -m h");
    CHECK_MESSAGE(contains(r.output, "OWN-HOOK-RAN"), r.output);
    CHECK(host_output("git -C " + ws + " config --get core.hooksPath") == ".husky/_");
  }
  CHECK(fx.close(*s.session).ok());
  CHECK(control_fx.close(*control.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("core.hooksPath: absolute, under ~, missing, outside the roots, through a planted link") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string extra = scratch.sub("extra");
  const std::string outside = scratch.sub("outside");
  const std::string home = extra + "/home";
  REQUIRE(sh("git init -q " + ws) == 0);
  ::mkdir(home.c_str(), 0755);
  const char* saved_home = std::getenv("HOME");
  const std::string old_home = saved_home ? saved_home : "";
  ::setenv("HOME", home.c_str(), 1);
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  config.writable_roots = {extra};
  const std::string base_config = read_file(ws + "/.git/config");

  SUBCASE("under ~ (in another root), absolute in another root, missing: made and read-only") {
    write_file(ws + "/.git/config", base_config + "[core]\n\thooksPath = ~/githooks\n"
                                    "[core]\n\tHooksPath = \"" + extra + "/abs-hooks\"\n"
                                    "[include]\n\tpath = ~/.gitconfig-extra\n");
    auto s = fx.spawn(config, in_dir(ws));
    REQUIRE_MESSAGE(s.session, describe(s.error));
    CHECK(exists(home + "/githooks"));
    CHECK(exists(extra + "/abs-hooks"));
    CHECK(exists(home + "/.gitconfig-extra"));
    for (const std::string& write : {"echo x > " + home + "/githooks/pre-commit",
                                     "echo x > " + extra + "/abs-hooks/pre-commit",
                                     "echo x >> " + home + "/.gitconfig-extra"}) {
      CAPTURE(write);
      auto r = run(fx, *s.session, write);
      CHECK_MESSAGE(contains(r.output, "Read-only file system"), r.output);
    }
    // The rest of that root stays writable.
    CHECK(run(fx, *s.session, "echo x > " + extra + "/free").exit_code == 0);
    CHECK(fx.close(*s.session).ok());
  }
  SUBCASE("outside the roots: nothing made, read-only as all the host is") {
    write_file(ws + "/.git/config", base_config + "[core]\n\thooksPath = " + outside + "/hooks\n");
    auto s = fx.spawn(config, in_dir(ws));
    REQUIRE_MESSAGE(s.session, describe(s.error));
    CHECK_FALSE(exists(outside + "/hooks"));
    auto r = run(fx, *s.session, "mkdir " + outside + "/hooks");
    CHECK_MESSAGE(contains(r.output, "Read-only file system"), r.output);
    CHECK(fx.close(*s.session).ok());
  }
  SUBCASE("a hooks directory that is a link planted in the root: the spawn is refused") {
    write_file(ws + "/.git/config", base_config + "[core]\n\thooksPath = .husky\n");
    REQUIRE(::symlink(outside.c_str(), (ws + "/.husky").c_str()) == 0);
    auto s = fx.spawn(config, in_dir(ws));
    REQUIRE_FALSE(s.session);
    CHECK_MESSAGE(contains(describe(s.error), ws + "/.husky is a symbolic link"), describe(s.error));
    // Positive control: the same configuration without the link starts.
    ::unlink((ws + "/.husky").c_str());
    auto again = fx.spawn(config, in_dir(ws));
    REQUIRE_MESSAGE(again.session, describe(again.error));
    CHECK(contains(run(fx, *again.session, "echo x > .husky/pre-commit").output, "Read-only file system"));
    CHECK(fx.close(*again.session).ok());
  }
  SUBCASE("a hooksPath reached through a planted link inside the root: refused") {
    ::mkdir((ws + "/real").c_str(), 0755);
    REQUIRE(::symlink((ws + "/real").c_str(), (ws + "/tools").c_str()) == 0);
    write_file(ws + "/.git/config", base_config + "[core]\n\thooksPath = tools/hooks\n");
    auto s = fx.spawn(config, in_dir(ws));
    REQUIRE_FALSE(s.session);
    CHECK_MESSAGE(contains(describe(s.error), ws + "/tools is a symbolic link inside the writable root"),
                  describe(s.error));
  }
  if (saved_home) {
    ::setenv("HOME", old_home.c_str(), 1);
  } else {
    ::unsetenv("HOME");
  }
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("protected_paths: a default left out with !, .git named whole read-only, a bad ! refused") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  REQUIRE(sh("git init -q " + ws) == 0);
  write_file(ws + "/.envrc", "export A=1\n");
  ::mkdir((ws + "/.vscode").c_str(), 0755);
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  config.protected_paths = {"!.envrc", ".git"};
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  CHECK(run(fx, *s.session, "echo x >> .envrc").exit_code == 0);
  CHECK(contains(run(fx, *s.session, "echo x > .vscode/settings.json").output, "Read-only file system"));
  auto r = run(fx, *s.session, "echo f > f && git add f");
  CHECK_MESSAGE(contains(r.output, "index.lock': Read-only file system"), r.output);
  CHECK(fx.close(*s.session).ok());

  config.protected_paths = {"!.bashrc"};
  auto refused = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(refused.session);
  CHECK(refused.error->code == Code::INVALID_ARGUMENT);
  CHECK_MESSAGE(contains(describe(refused.error), "\"!.bashrc\" leaves out no default"), describe(refused.error));
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("a --separate-git-dir repository in another root commits; its hooks stay read-only") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string gitdirs = scratch.sub("gitdirs");
  REQUIRE(sh("git init -q --separate-git-dir=" + gitdirs + "/repo " + ws) == 0);
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  config.writable_roots = {gitdirs};
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = run(fx, *s.session, "echo f > f && git add f && " + kCommit + " sep; echo STATUS=$?");
  CHECK_MESSAGE(contains(r.output, "\nSTATUS=0"), r.output);
  CHECK(host_output("git -C " + ws + " log -1 --format=%s") == "sep");
  for (const std::string& write : {"echo x > " + gitdirs + "/repo/hooks/pre-commit",
                                   "echo x >> " + gitdirs + "/repo/config", std::string("echo gitdir: /elsewhere > .git")}) {
    CAPTURE(write);
    CHECK(contains(run(fx, *s.session, write).output, "Read-only file system"));
  }
  // A FIFO where the next spawn reads a file (the git directory is writable): that spawn
  // must not wait on it, on the host's loop.
  CHECK(run(fx, *s.session, "mkfifo " + gitdirs + "/repo/commondir").exit_code == 0);
  CHECK(fx.close(*s.session).ok());
  auto next = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(next.session, describe(next.error));
  // A commondir made there with a path in it: no linked worktree's, so the next spawn says so.
  CHECK(run(fx, *next.session, "rm " + gitdirs + "/repo/commondir && echo " + ws + " > " + gitdirs +
                                   "/repo/commondir").exit_code == 0);
  CHECK(fx.close(*next.session).ok());
  auto refused = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(refused.session);
  CHECK_MESSAGE(contains(describe(refused.error), "/repo/commondir exists in no linked worktree's"),
                describe(refused.error));
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("a protected path's parents cannot be renamed away; a hook's link target is protected; hard links refuse") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  REQUIRE(sh("git init -q " + ws) == 0);
  const std::string base_config = read_file(ws + "/.git/config");
  write_file(ws + "/.git/config", base_config + "[core]\n\thooksPath = tools/git/hooks\n"
                                  "[include]\n\tpath = ../conf/deep/repo.gitconfig\n");
  for (const auto& dir : {"/tools", "/tools/git", "/tools/git/hooks", "/conf", "/conf/deep", "/scripts"}) {
    ::mkdir((ws + dir).c_str(), 0755);
  }
  write_file(ws + "/conf/deep/repo.gitconfig", "[alias]\n\tst = status\n");
  write_file(ws + "/scripts/pre-push", "#!/bin/sh\nexit 0\n");
  REQUIRE(::symlink("../../../scripts/pre-push", (ws + "/tools/git/hooks/pre-push").c_str()) == 0);
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // Renaming a parent would let the session make the protected path anew under its name.
  for (const std::string move : {"mv tools tools-old", "mv tools/git tools/git-old", "mv conf conf-old",
                           "mv conf/deep conf/deep-old", "mv scripts scripts-old"}) {
    CAPTURE(move);
    auto r = run(fx, *s.session, move);
    CHECK_MESSAGE(contains(r.output, "Device or resource busy"), r.output);
  }
  for (const std::string write : {"echo x >> scripts/pre-push", "echo x >> conf/deep/repo.gitconfig",
                            "echo x > tools/git/hooks/pre-commit"}) {
    CAPTURE(write);
    CHECK(contains(run(fx, *s.session, write).output, "Read-only file system"));
  }
  // The parents themselves stay writable.
  CHECK(run(fx, *s.session, "echo x > tools/free && echo x > scripts/other && echo x > conf/free").exit_code == 0);
  CHECK(fx.close(*s.session).ok());

  // A second name for a protected file (an earlier session made .vscode/tasks.json while
  // .vscode was not there, and linked it): refused before anything runs.
  ::mkdir((ws + "/.vscode").c_str(), 0755);
  write_file(ws + "/.vscode/tasks.json", "{}\n");
  REQUIRE(::link((ws + "/.vscode/tasks.json").c_str(), (ws + "/innocent.json").c_str()) == 0);
  auto refused = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(refused.session);
  CHECK_MESSAGE(contains(describe(refused.error), ws + "/.vscode/tasks.json has 2 hard links"), describe(refused.error));
  // A hook linking to a file the session may still make: refused too.
  ::unlink((ws + "/innocent.json").c_str());
  REQUIRE(::symlink("../../../scripts/missing", (ws + "/tools/git/hooks/pre-commit").c_str()) == 0);
  refused = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(refused.session);
  CHECK_MESSAGE(contains(describe(refused.error), "tools/git/hooks/pre-commit links to"), describe(refused.error));
  // A link to a missing file outside the roots is harmless: nothing can make it there.
  ::unlink((ws + "/tools/git/hooks/pre-commit").c_str());
  REQUIRE(::symlink("/nonexistent-dshpty/hook", (ws + "/tools/git/hooks/pre-commit").c_str()) == 0);
  auto outside = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(outside.session, describe(outside.error));
  CHECK(fx.close(*outside.session).ok());
  // A .git/hooks linked to a directory of the worktree: the link could be replaced.
  ::unlink((ws + "/tools/git/hooks/pre-commit").c_str());
  REQUIRE(sh("mv " + ws + "/.git/hooks " + ws + "/shared-hooks") == 0);
  REQUIRE(::symlink("../shared-hooks", (ws + "/.git/hooks").c_str()) == 0);
  refused = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(refused.session);
  CHECK_MESSAGE(contains(describe(refused.error), ws + "/.git/hooks is a symbolic link"), describe(refused.error));
  // Positive control: without them, the spawn starts.
  ::unlink((ws + "/.git/hooks").c_str());
  auto again = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(again.session, describe(again.error));
  CHECK(fx.close(*again.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("a linked worktree commits when its repository is a root; what points git elsewhere stays read-only") {
  ScratchDir scratch;
  const std::string main_ws = scratch.sub("main");
  const std::string linked = scratch.path() + "/linked";
  const std::string other = scratch.path() + "/other";
  REQUIRE(sh("git init -q " + main_ws + " && git -C " + main_ws + " " + kCommit.substr(4) + " base --allow-empty") == 0);
  REQUIRE(sh("git -C " + main_ws + " worktree add -q -b lb " + linked) == 0);
  REQUIRE(sh("git -C " + main_ws + " worktree add -q -b ob " + other) == 0);
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  config.writable_roots = {main_ws};
  auto s = fx.spawn(config, in_dir(linked));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = run(fx, *s.session, "echo f > f && git add f && " + kCommit + " in-linked; echo STATUS=$?");
  CHECK_MESSAGE(contains(r.output, "\nSTATUS=0"), r.output);
  CHECK(host_output("git -C " + main_ws + " log -1 --format=%s lb") == "in-linked");
  const std::string gd = main_ws + "/.git";
  for (const std::string& write : {"echo x >> " + gd + "/config", "echo x > " + gd + "/hooks/post-commit",
                                   "echo . > " + gd + "/worktrees/linked/commondir",
                                   "echo x > " + gd + "/worktrees/other/commondir", std::string("echo x > .git")}) {
    CAPTURE(write);
    CHECK(contains(run(fx, *s.session, write).output, "Read-only file system"));
  }
  for (const std::string& move : {"mv " + gd + "/worktrees " + gd + "/wt-old", "mv " + gd + "/worktrees/other " + gd + "/o"}) {
    CAPTURE(move);
    CHECK(contains(run(fx, *s.session, move).output, "Device or resource busy"));
  }
  CHECK(fx.close(*s.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("the known limit: a session can make .git/commondir; the next spawn there is refused, naming it") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  REQUIRE(sh("git init -q " + ws) == 0);
  ShellFixture fx;
  auto config = patient(sandbox_config(fx, SandboxMode::workspace_write));
  auto s = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // A new name in the writable .git: bind mounts cannot refuse it (docs/security.md).
  auto r = run(fx, *s.session, "mkdir -p elsewhere/objects elsewhere/refs && echo " + ws +
                                   "/elsewhere > .git/commondir && echo MADE");
  CHECK_MESSAGE(contains(r.output, "\nMADE"), r.output);
  CHECK(fx.close(*s.session).ok());
  auto refused = fx.spawn(config, in_dir(ws));
  REQUIRE_FALSE(refused.session);
  CHECK_MESSAGE(contains(describe(refused.error), ws + "/.git/commondir exists"), describe(refused.error));
  ::unlink((ws + "/.git/commondir").c_str());
  auto again = fx.spawn(config, in_dir(ws));
  REQUIRE_MESSAGE(again.session, describe(again.error));
  CHECK(fx.close(*again.session).ok());
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}

TEST_CASE("git config as dshpty reads it: includes (any condition, nested, cyclic), hooksPath, worktreeConfig") {
  ScratchDir scratch;
  const std::string d = scratch.sub("cfg");
  ::mkdir((d + "/sub").c_str(), 0755);
  write_file(d + "/config",
             "# a comment\n"
             "[core]hooksPath=first ; same line as the header\n"
             "[Include]\n\tPATH = \"sub/a.inc\" # quoted, then a comment\n"
             "[includeIf \"gitdir:/nowhere/]\"]\n  path = missing.inc\n"
             "[extensions]\n\tworktreeConfig\n"
             "[alias]\n\tx = \"!echo # not a comment\"\n"
             "[core]\n\thooksPath = with\\\n continued\n");
  write_file(d + "/sub/a.inc", "[include]\n\tpath = b.inc\n\tpath = ~/home.inc\n");
  write_file(d + "/sub/b.inc", "[core]\n\thookspath = \"  spaced  \"\n[include]\n\tpath = a.inc\n");
  const char* saved = std::getenv("HOME");
  const std::string old_home = saved ? saved : "";
  ::setenv("HOME", d.c_str(), 1);
  GitConfigRefs refs = read_git_config({d + "/config"});
  if (saved) {
    ::setenv("HOME", old_home.c_str(), 1);
  } else {
    ::unsetenv("HOME");
  }
  CHECK(refs.includes == std::vector<std::string>{d + "/sub/a.inc", d + "/sub/b.inc", d + "/sub/a.inc",
                                                  d + "/home.inc", d + "/missing.inc"});
  CHECK(refs.hooks_paths == std::vector<std::string>{"first", "  spaced  ", "with continued"});
  CHECK(refs.worktree_config);
}

TEST_CASE("the known limit: a submodule the session adds runs its config in the host's git status") {
  ScratchDir scratch;
  const std::string ws = scratch.sub("ws");
  const std::string marker = scratch.path() + "/fsmonitor-ran";
  REQUIRE(sh("git init -q " + ws) == 0);
  ShellFixture fx;
  auto s = fx.spawn(patient(sandbox_config(fx, SandboxMode::workspace_write)), in_dir(ws));
  REQUIRE_MESSAGE(s.session, describe(s.error));
  auto r = run(fx, *s.session,
               "git init -q sub && git -C sub " + kCommit.substr(4) + " s --allow-empty && echo x > sub/untracked && "
               "printf '[core]\\n\\tfsmonitor = \"touch " + marker + "; false\"\\n' >> sub/.git/config && "
               "git add sub 2>/dev/null; echo STATUS=$?");
  CHECK_MESSAGE(contains(r.output, "\nSTATUS=0"), r.output);
  CHECK(fx.close(*s.session).ok());
  // With diff.ignoreSubmodules=dirty the host's status does not run git in it.
  sh("git -C " + ws + " -c diff.ignoreSubmodules=dirty status");
  CHECK_FALSE(exists(marker));
  sh("git -C " + ws + " status");
  CHECK(exists(marker));  // docs/security.md, "Limits": named .git keeps the index read-only
  CHECK_MESSAGE(left_behind(fx.marker()).empty(), left_behind(fx.marker()));
}
