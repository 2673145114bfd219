#include "record/detached_writer.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace dshpty::shell::record {

namespace {
constexpr std::size_t kCutReserve = 192;  // as the host's recorder keeps for its cut marker
constexpr std::size_t kTailBytes = 64 * 1024;
}  // namespace

DetachedWriter::DetachedWriter(proc::UniqueFd fd, double start, std::uint64_t max_bytes)
    : fd_(std::move(fd)), start_(start), max_bytes_(max_bytes) {}

DetachedWriter::~DetachedWriter() {
  if (state_ != State::writing) return;
  std::string rest;
  scrub_.finish(rest);
  scratch_.clear();
  utf8_.feed(rest, scratch_);
  utf8_.finish(scratch_);
  if (!scratch_.empty()) add(last_ + start_, 'o', scratch_);
}

// The host is gone: the file ends where it stopped writing. A write cut short by its death
// would leave half a line, which players refuse: the file is cut back to its last whole
// line. The last line's time is the floor for ours (times never go back).
bool DetachedWriter::begin(double now) {
  if (state_ == State::stopped) return false;
  if (state_ == State::writing) return true;
  struct stat st {};
  if (fd_.get() < 0 || ::fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    stop();
    return false;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::size_t tail_len = static_cast<std::size_t>(std::min<std::uint64_t>(size, kTailBytes));
  std::string tail(tail_len, '\0');
  const off_t tail_at = static_cast<off_t>(size - tail_len);
  // The descriptor is write-only: the tail is read through a read-only one of the same file.
  char self[64];
  std::snprintf(self, sizeof self, "/proc/self/fd/%d", fd_.get());
  proc::UniqueFd reader(::open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (reader.get() < 0 || ::pread(reader.get(), tail.data(), tail_len, tail_at) != static_cast<ssize_t>(tail_len)) {
    tail.clear();  // unreadable: nothing is cut back, no time floor
  }
  size_ = size;
  if (!tail.empty() && tail.back() != '\n') {
    const auto nl = tail.rfind('\n');
    const std::uint64_t whole = nl == std::string::npos ? size - tail_len : size - tail_len + nl + 1;
    if (::ftruncate(fd_.get(), static_cast<off_t>(whole)) == 0) {
      size_ = whole;
      tail.resize(nl == std::string::npos ? 0 : nl + 1);
    }
  }
  if (!tail.empty()) {
    const auto line_start = tail.rfind('\n', tail.size() - 2);
    const std::string line = tail.substr(line_start == std::string::npos ? 0 : line_start + 1);
    if (line.size() > 1 && line[0] == '[') last_ = std::max(last_, std::strtod(line.c_str() + 1, nullptr));
  }
  if (::lseek(fd_.get(), 0, SEEK_END) < 0) {
    stop();
    return false;
  }
  state_ = State::writing;
  add(now, 'm', "[no host holds the session: its helper records what it prints until a host takes it over]");
  return state_ == State::writing;
}

void DetachedWriter::add(double now, char code, std::string_view data) {
  if (state_ != State::writing) return;
  last_ = std::max(last_, now - start_);
  std::string line;
  append_event(line, last_, code, data);
  bool cut = false;
  if (size_ + line.size() + kCutReserve > max_bytes_) {
    line.clear();
    append_event(line, last_, 'm',
                 "[recording cut: it reached record_max_bytes (" + std::to_string(max_bytes_) + " bytes)]");
    cut = true;
  }
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_.get(), line.data() + done, line.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // A full disk: the file ends at its last whole line, as the host's recorder leaves it.
    (void)::ftruncate(fd_.get(), static_cast<off_t>(size_));
    stop();
    return;
  }
  size_ += line.size();
  if (cut) stop();
}

void DetachedWriter::output(std::string_view bytes, double now) {
  if (!begin(now)) return;
  clean_.clear();
  scrub_.feed(bytes, clean_);
  scratch_.clear();
  utf8_.feed(clean_, scratch_);
  if (!scratch_.empty()) add(now, 'o', scratch_);
}

void DetachedWriter::host_attached(double now) {
  if (state_ == State::writing) {
    add(now, 'm', "[taken over by a new host: it records in a file of its own]");
  }
  stop();
}

void DetachedWriter::stop() {
  state_ = State::stopped;
  fd_.reset();
}

}  // namespace dshpty::shell::record
