#include "record/record_file.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/random_hex.hpp"

namespace dshpty::shell::record {

namespace {
constexpr std::size_t kMaxPartBytes = 64;
// A random part taken already is a file planted under a guess of 32 random bits, or two
// hosts' sessions of one id in one second drawing the same bits: a few tries are plenty.
constexpr unsigned kMaxAttempts = 8;
}  // namespace

std::string sanitize_name_part(std::string_view part) {
  std::string out;
  for (char c : part.substr(0, kMaxPartBytes)) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
    out.push_back(safe ? c : '_');
  }
  if (out.empty()) return "_";
  if (out.front() == '.') out.front() = '_';
  return out;
}

std::string recording_file_name(std::string_view owner, std::string_view session_id, std::time_t start,
                                std::string_view unique) {
  struct tm utc {};
  ::gmtime_r(&start, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::string name = sanitize_name_part(owner) + "-" + sanitize_name_part(session_id) + "-" + stamp;
  return name + "-" + sanitize_name_part(unique) + ".cast";
}

Result<std::string> random_name_part() { return proc::random_hex(kUniqueHexDigits / 2); }

Result<RecordingFile> create_recording_file(const std::string& dir, std::string_view owner,
                                            std::string_view session_id, std::time_t start,
                                            Result<std::string> (*unique)()) {
  proc::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return make_error(Code::INVALID_ARGUMENT,
                        "record: the recording directory " + dir + " does not exist or is no directory", {}, err);
    }
    return make_system_error(Code::BACKEND_FAILED, "record: recording directory " + dir, err);
  }
  return create_recording_file_at(dir_fd.get(), dir, owner, session_id, start, unique);
}

Result<RecordingFile> create_recording_file_at(int dir_fd, const std::string& dir, std::string_view owner,
                                               std::string_view session_id, std::time_t start,
                                               Result<std::string> (*unique)()) {
  for (unsigned attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    auto drawn = unique();
    if (!drawn) return drawn.error();
    std::string name = recording_file_name(owner, session_id, start, *drawn);
    proc::UniqueFd fd(::openat(dir_fd, name.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600));
    const std::string path = (dir.ends_with('/') ? dir : dir + "/") + name;
    if (fd.get() < 0) {
      if (errno == EEXIST) continue;
      return make_system_error(Code::BACKEND_FAILED, "record: creating " + path, errno);
    }
    RecordingFile file{std::move(fd), path, proc::UniqueFd(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0)), std::move(name)};
    struct stat st {};
    if (::fstat(file.fd.get(), &st) == 0) {
      file.dev = st.st_dev;
      file.ino = st.st_ino;
    }
    return file;
  }
  return make_error(Code::BACKEND_FAILED, "record: " + std::to_string(kMaxAttempts) + " random names for session " +
                                              std::string(session_id) + " were all taken in " + dir);
}

}  // namespace dshpty::shell::record
