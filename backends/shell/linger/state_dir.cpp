#include "linger/state_dir.hpp"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dshpty::linger {

std::string default_state_dir() {
  const char* runtime = ::getenv("XDG_RUNTIME_DIR");
  if (runtime && runtime[0] == '/') return std::string(runtime) + "/dshpty";
  return "/tmp/dshpty-" + std::to_string(::getuid());
}

Result<std::string> prepare_state_dir(const std::string& configured) {
  const std::string dir = configured.empty() ? default_state_dir() : configured;
  if (dir.empty() || dir.front() != '/') {
    return make_error(Code::INVALID_ARGUMENT, "state directory " + dir + " is not an absolute path");
  }
  if (::mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST) {
    return make_system_error(Code::BACKEND_FAILED, "state directory " + dir, errno);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) < 0) return make_system_error(Code::BACKEND_FAILED, "state directory " + dir, errno);
  if (!S_ISDIR(st.st_mode)) {
    return make_error(Code::BACKEND_FAILED, "unsafe state directory " + dir + ": it is not a directory", {}, ENOTDIR);
  }
  if (st.st_uid != ::getuid()) {
    return make_error(Code::BACKEND_FAILED,
                      "unsafe state directory " + dir + ": owned by uid " + std::to_string(st.st_uid) +
                          ", not " + std::to_string(::getuid()),
                      {}, EACCES);
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    char mode[8];
    ::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return make_error(Code::BACKEND_FAILED,
                      "unsafe state directory " + dir + ": mode " + mode + " lets others in (it must be 0700)", {},
                      EACCES);
  }
  return dir;
}

Result<std::optional<std::string>> existing_state_dir(const std::string& configured) {
  const std::string dir = configured.empty() ? default_state_dir() : configured;
  struct stat st {};
  if (!dir.empty() && dir.front() == '/' && ::lstat(dir.c_str(), &st) < 0 && errno == ENOENT) {
    return std::optional<std::string>();
  }
  auto checked = prepare_state_dir(configured);
  if (!checked) return checked.error();
  return std::optional<std::string>(*checked);
}

}  // namespace dshpty::linger
