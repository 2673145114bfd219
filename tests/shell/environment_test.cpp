// What a session inherits of the host's environment (docs/security.md, "Environment"): the
// name and value filter of unconfined sessions, the allow-list of confined ones, and the
// operator's names passed through both. Pure: no shell runs.
#include <doctest/doctest.h>

#include <algorithm>

#include "local/environment.hpp"

using namespace dshpty::shell;

namespace {
std::vector<std::string> names(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const auto& entry : env) out.push_back(entry.substr(0, entry.find('=')));
  return out;
}
bool has(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}
}  // namespace

TEST_CASE("secret-looking names are scrubbed; their look-alikes are not") {
  for (const char* name : {"API_KEY", "DB_PASSWORD", "MYSQL_PWD", "GH_PAT", "gh_pat", "CI_JOB_JWT", "SENTRY_DSN",
                           "SLACK_WEBHOOK_URL", "COOKIE", "DOCKER_AUTH_CONFIG", "AWS_SECRET_ACCESS_KEY",
                           "NPM_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS", "PGPASSFILE", "DSHPTY_X", "DSH_Y",
                           "HTTP_AUTHORIZATION", "APP_DB_PW", "GITHUB_OAUTH", "OPENAI_BEARER", "DEPLOY_PRIVATE_RSA",
                           "SIGNING_SALT", "LC_APP_TOKEN"}) {
    CAPTURE(name);
    CHECK(is_scrubbed_name(name));
  }
  for (const char* name : {"PATH", "PWD", "OLDPWD", "HOME", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "SSH_AUTH_SOCK",
                           "PATCH_LEVEL", "LANG", "EDITOR", "AUTHOR"}) {
    CAPTURE(name);
    CHECK_FALSE(is_scrubbed_name(name));
  }
}

TEST_CASE("a URL with a password is a secret whatever its name") {
  CHECK(is_url_with_password("postgres://u:pw@db/x"));
  CHECK(is_url_with_password("http://user:p%40ss@proxy:3128"));
  CHECK(is_url_with_password("redis://:pw@cache:6379/0"));
  CHECK_FALSE(is_url_with_password("https://example.com/a:b@c"));  // '@' past the authority
  CHECK_FALSE(is_url_with_password("https://k@sentry.io/1"));       // a user, no password
  CHECK_FALSE(is_url_with_password("http://proxy:3128"));
  CHECK_FALSE(is_url_with_password("a:b@c"));
}

TEST_CASE("unconfined: all but secrets; confined: the allow-list; both: what the operator passes") {
  std::vector<std::string> host_entries = {"PATH=/bin", "HOME=/h", "LC_ALL=C", "LC_APP_TOKEN=t", "EDITOR=vi", "MYSQL_PWD=x",
                                           "HTTPS_PROXY=http://u:pw@p:1", "GH_TOKEN=t", "DISPLAY=:0",
                                           "PS1=$ ", "SSH_AUTH_SOCK=/run/a"};
  std::vector<char*> host;
  for (auto& e : host_entries) host.push_back(e.data());
  host.push_back(nullptr);
  auto open_env = names(build_environment(host.data(), "pty-1", "dumb", {}));
  for (const char* kept : {"PATH", "HOME", "LC_ALL", "EDITOR", "DISPLAY", "SSH_AUTH_SOCK", "TERM", "DSH_PTY_SESSION_ID"})
    CHECK_MESSAGE(has(open_env, kept), kept);
  for (const char* gone : {"MYSQL_PWD", "HTTPS_PROXY", "GH_TOKEN", "PS1"}) CHECK_MESSAGE(!has(open_env, gone), gone);

  auto confined = names(build_environment(host.data(), "pty-1", "dumb", {}, {.allow_list_only = true, .pass = {"GH_TOKEN"}}));
  for (const char* kept : {"PATH", "HOME", "LC_ALL", "TERM", "DSH_PTY_SESSION_ID", "PAGER", "GH_TOKEN"})
    CHECK_MESSAGE(has(confined, kept), kept);
  for (const char* gone : {"EDITOR", "DISPLAY", "SSH_AUTH_SOCK", "MYSQL_PWD", "HTTPS_PROXY", "PS1", "LC_APP_TOKEN"})
    CHECK_MESSAGE(!has(confined, gone), gone);
}
