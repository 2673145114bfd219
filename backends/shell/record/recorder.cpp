#include "record/recorder.hpp"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

namespace dshpty::shell::record {

std::string send_marker(const SendNote& note) {
  if (note.shown == InputShown::hidden) return std::string(kHiddenInput);
  if (note.shown == InputShown::relayed) return std::string(kRelayedInput);
  if (note.check_in) return "[check-in]";
  std::string out(note.text);
  if (!note.keys.empty()) {
    out += out.empty() ? "keys:" : " keys:";
    for (const std::string& key : note.keys) out += " " + key;
  }
  return out;
}

Recorder::Recorder(struct ev_loop* loop, RecordingFile file, const CastHeader& header, std::size_t max_bytes,
                   std::string secret)
    : loop_(loop),
      fd_(std::move(file.fd)),
      max_bytes_(max_bytes),
      secret_(std::move(secret)),
      output_scrub_(secret_),
      input_scrub_(secret_),
      dir_(std::move(file.dir)),
      name_(std::move(file.name)),
      dev_(file.dev),
      ino_(file.ino) {
  info_.path = std::move(file.path);
  ev_io_init(&io_, &Recorder::on_writable, fd_.get(), EV_WRITE);
  io_.data = this;
  flush_timer_.bind<&Recorder::on_flush_timer>(loop, this);
  start_ = last_ = ev_now(loop_);
  pending_ = encode_header(header);
  accepted_ = pending_.size();
  ev_io_start(loop_, &io_);
}

Recorder::~Recorder() {
  on_session_end();
  if (remove_unless_kept_) remove_file();
}

void Recorder::remove_file() {
  if (dir_.get() < 0 || name_.empty()) return;
  // Only the file made here: a name someone replaced since is left as it is.
  struct stat st {};
  if (::fstatat(dir_.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    ::unlinkat(dir_.get(), name_.c_str(), 0);
}

double Recorder::elapsed() {
  // Never backwards: players expect times in order.
  const double now = ev_now(loop_);
  if (now > last_) last_ = now;
  return last_ - start_;
}

void Recorder::add(char code, std::string_view data) {
  if (info_.state != RecordingState::recording) return;
  // Encoded straight into the buffer; taken back when it passes the cap.
  const std::size_t start = pending_.size();
  append_event(pending_, elapsed(), code, data);
  if (accepted_ + (pending_.size() - start) + kCutReserve > max_bytes_) {
    pending_.resize(start);
    append_event(pending_, elapsed(), 'm',
                 "[recording cut: it reached record_max_bytes (" + std::to_string(max_bytes_) + " bytes)]");
    info_.state = RecordingState::cut;
  }
  const std::size_t line = pending_.size() - start;
  if (pending_.size() - pending_from_ > kMaxPendingBytes) {
    fail("the disk did not take the recording's writes as fast as the session wrote (over " +
         std::to_string(kMaxPendingBytes) + " bytes waiting)");
    return;
  }
  accepted_ += line;
  if (ev_is_active(&io_)) return;
  if (pending_.size() - pending_from_ >= kWriteSoonBytes) {
    flush_timer_.stop();
    ev_io_start(loop_, &io_);
  } else {
    flush_timer_.start_if_idle(kFlushDelay);
  }
}

void Recorder::on_flush_timer() {
  if (fd_.get() >= 0 && !ev_is_active(&io_)) ev_io_start(loop_, &io_);
}

void Recorder::on_output(std::string_view raw) {
  if (info_.state != RecordingState::recording) return;
  const std::string_view clean = output_utf8_.view(output_scrub_.view(raw, scrubbed_), scratch_);
  if (!clean.empty()) add('o', clean);
}

void Recorder::on_input(std::string_view bytes, InputShown shown) {
  const bool flush = std::exchange(send_input_next_, false);
  if (info_.state == RecordingState::recording && !bytes.empty()) {
    if (shown != InputShown::shown) {
      add('i', shown == InputShown::hidden ? kHiddenInput : kRelayedInput);
    } else {
      input(bytes);
    }
  }
  if (flush) flush_now();
}

void Recorder::on_shown() { flush_now(); }

void Recorder::flush_now() {
  if (info_.state == RecordingState::failed || fd_.get() < 0) return;
  if (write_pending() && pending_.empty()) stop_io();
}

void Recorder::input(std::string_view bytes) {
  // The nonce is shown to a client that asks the shell for it (`echo $__dshpty_nonce`): what
  // the client types back is cut as the output is.
  std::string kept;
  input_scrub_.feed(bytes, kept);
  scratch_.clear();
  input_utf8_.feed(kept, scratch_);
  if (!scratch_.empty()) add('i', scratch_);
}

void Recorder::on_send(const SendNote& note) {
  if (info_.state != RecordingState::recording) return;
  Utf8Stream clean;  // a C++ host's text may be any bytes
  std::string words;
  clean.feed(SecretScrub::scrubbed(secret_, send_marker(note)), words);
  clean.finish(words);
  add('m', words);
  send_input_next_ = !note.check_in;
}

void Recorder::mark(std::string_view words) {
  Utf8Stream clean;
  std::string out;
  clean.feed(words, out);
  clean.finish(out);
  add('m', out);
}

void Recorder::on_resize(unsigned rows, unsigned cols) {
  add('r', std::to_string(cols) + "x" + std::to_string(rows));
}

void Recorder::on_session_end() {
  if (fd_.get() < 0) return;
  if (info_.state == RecordingState::recording) {
    scrubbed_.clear();
    output_scrub_.finish(scrubbed_);
    scratch_.clear();
    output_utf8_.feed(scrubbed_, scratch_);
    output_utf8_.finish(scratch_);
    if (!scratch_.empty()) add('o', scratch_);
    std::string typed;
    input_scrub_.finish(typed);
    scratch_.clear();
    input_utf8_.feed(typed, scratch_);
    input_utf8_.finish(scratch_);
    if (!scratch_.empty()) add('i', scratch_);
  }
  // The close answers after this: what is buffered goes to the file now.
  if (write_pending() && pending_from_ < pending_.size()) {
    fail("the file took no more bytes at the session's end");
  }
  stop_io();
  fd_.reset();
  pending_.clear();
  pending_from_ = 0;
  if (info_.state == RecordingState::recording) info_.state = RecordingState::closed;
}

bool Recorder::write_pending() {
  while (fd_.get() >= 0 && pending_from_ < pending_.size()) {
    const ssize_t n = ::write(fd_.get(), pending_.data() + pending_from_, pending_.size() - pending_from_);
    if (n > 0) {
      const char* written = pending_.data() + pending_from_;
      if (const void* nl = ::memrchr(written, '\n', static_cast<std::size_t>(n))) {
        whole_lines_ = info_.bytes + static_cast<std::uint64_t>(static_cast<const char*>(nl) - written) + 1;
      }
      pending_from_ += static_cast<std::size_t>(n);
      info_.bytes += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;  // later
    fail(std::string("writing the recording: ") + (n < 0 ? ::strerror(errno) : "the file took no bytes"));
    return false;
  }
  if (pending_from_ == pending_.size()) {
    pending_.clear();
    pending_from_ = 0;
  } else if (pending_from_ > (std::size_t{1} << 20)) {
    pending_.erase(0, pending_from_);
    pending_from_ = 0;
  }
  return fd_.get() >= 0;
}

void Recorder::on_writable(struct ev_loop*, ev_io* w, int) {
  auto* self = static_cast<Recorder*>(w->data);
  if (self->write_pending() && self->pending_.empty()) self->stop_io();
}

void Recorder::fail(std::string why) {
  info_.state = RecordingState::failed;
  info_.error = std::move(why);
  // A write cut short (ENOSPC part way) would leave half a line, which players refuse: the
  // file ends at its last whole line (shrinking needs no space).
  if (fd_.get() >= 0 && whole_lines_ < info_.bytes && ::ftruncate(fd_.get(), static_cast<off_t>(whole_lines_)) == 0) {
    info_.bytes = whole_lines_;
  }
  stop_io();
  fd_.reset();
  pending_.clear();
  pending_from_ = 0;
}

void Recorder::stop_io() {
  flush_timer_.stop();
  if (ev_is_active(&io_)) ev_io_stop(loop_, &io_);
}

Recording Recorder::state() const {
  // While it runs (or once cut) the file holds, within a flush delay, all that was taken in:
  // a reader told "cut" expects the final size, not what the last write had reached.
  Recording shown = info_;
  if (info_.state == RecordingState::recording || info_.state == RecordingState::cut) shown.bytes = accepted_;
  return shown;
}

}  // namespace dshpty::shell::record
