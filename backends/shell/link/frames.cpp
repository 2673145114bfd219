#include "link/frames.hpp"

#include <cassert>
#include <cstring>

namespace dshpty::frames {

const char* type_name(std::uint8_t type) {
  switch (static_cast<Type>(type)) {
    case Type::hello: return "HELLO";
    case Type::open: return "OPEN";
    case Type::in: return "IN";
    case Type::resize: return "RESIZE";
    case Type::signal: return "SIGNAL";
    case Type::mark: return "MARK";
    case Type::probe: return "PROBE";
    case Type::ack: return "ACK";
    case Type::kill: return "KILL";
    case Type::ping: return "PING";
    case Type::linger: return "LINGER";
    case Type::attach: return "ATTACH";
    case Type::sending: return "SENDING";
    case Type::take_back: return "TAKE_BACK";
    case Type::shown: return "SHOWN";
    case Type::watch_port: return "WATCH_PORT";
    case Type::look: return "LOOK";
    case Type::stop: return "STOP";
    case Type::welcome: return "WELCOME";
    case Type::started: return "STARTED";
    case Type::start_failed: return "START_FAILED";
    case Type::out: return "OUT";
    case Type::state: return "STATE";
    case Type::written: return "WRITTEN";
    case Type::output_ended: return "OUTPUT_ENDED";
    case Type::exited: return "EXITED";
    case Type::quiescent: return "QUIESCENT";
    case Type::pong: return "PONG";
    case Type::error: return "ERROR";
    case Type::lingering: return "LINGERING";
    case Type::attached: return "ATTACHED";
    case Type::taken: return "TAKEN";
    case Type::port_seen: return "PORT_SEEN";
    case Type::tree: return "TREE";
    case Type::stopped: return "STOPPED";
    case Type::limit_hit: return "LIMIT_HIT";
  }
  return nullptr;
}

const char* error_code_name(std::uint32_t code) {
  switch (static_cast<ErrorCode>(code)) {
    case ErrorCode::version_mismatch: return "VERSION_MISMATCH";
    case ErrorCode::helper_failed: return "HELPER_FAILED";
    case ErrorCode::protocol_error: return "PROTOCOL_ERROR";
    case ErrorCode::attach_refused: return "ATTACH_REFUSED";
    case ErrorCode::linger_unsafe: return "LINGER_UNSAFE";
    case ErrorCode::session_gone: return "SESSION_GONE";
  }
  return nullptr;
}

// ---- writing -----------------------------------------------------------------------------

namespace {
void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint64_t get_le(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
}  // namespace

FrameWriter& FrameWriter::begin(Type type) {
  start_ = out_.size();
  put_le(out_, 0, 4);
  out_.push_back(static_cast<char>(type));
  return *this;
}
FrameWriter& FrameWriter::u8(std::uint8_t v) { put_le(out_, v, 1); return *this; }
FrameWriter& FrameWriter::u16(std::uint16_t v) { put_le(out_, v, 2); return *this; }
FrameWriter& FrameWriter::u32(std::uint32_t v) { put_le(out_, v, 4); return *this; }
FrameWriter& FrameWriter::u64(std::uint64_t v) { put_le(out_, v, 8); return *this; }
FrameWriter& FrameWriter::str(std::string_view s) {
  u32(static_cast<std::uint32_t>(s.size()));
  out_.append(s);
  return *this;
}
FrameWriter& FrameWriter::raw(std::string_view bytes) {
  out_.append(bytes);
  return *this;
}
FrameWriter& FrameWriter::facts(const TerminalFacts& f) {
  return i32(f.foreground).u8(f.flags).i32(f.input_unread).u64(f.ignored_signals).str(f.cwd);
}

void FrameWriter::end() {
  const std::size_t length = out_.size() - start_ - 4;
  assert(length >= 1 && length <= kMaxFrame);
  for (int i = 0; i < 4; ++i) out_[start_ + static_cast<std::size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xff);
}

// ---- reading -----------------------------------------------------------------------------

bool PayloadReader::take(std::size_t n, const char** p) {
  if (failed_ || rest_.size() < n) {
    failed_ = true;
    return false;
  }
  *p = rest_.data();
  rest_.remove_prefix(n);
  return true;
}
std::uint8_t PayloadReader::u8() { const char* p; return take(1, &p) ? static_cast<std::uint8_t>(get_le(p, 1)) : 0; }
std::uint16_t PayloadReader::u16() { const char* p; return take(2, &p) ? static_cast<std::uint16_t>(get_le(p, 2)) : 0; }
std::uint32_t PayloadReader::u32() { const char* p; return take(4, &p) ? static_cast<std::uint32_t>(get_le(p, 4)) : 0; }
std::uint64_t PayloadReader::u64() { const char* p; return take(8, &p) ? get_le(p, 8) : 0; }
std::string_view PayloadReader::str() {
  const std::uint32_t n = u32();
  const char* p;
  if (!take(n, &p)) return {};
  return {p, n};
}
std::string_view PayloadReader::rest() {
  std::string_view all = failed_ ? std::string_view() : rest_;
  rest_ = {};
  return all;
}

TerminalFacts PayloadReader::facts() {
  TerminalFacts f;
  f.foreground = i32();
  f.flags = u8();
  f.input_unread = i32();
  f.ignored_signals = u64();
  f.cwd = std::string(str());
  return f;
}

void FrameReader::feed(std::string_view bytes) {
  if (!error_.empty()) return;
  // Drop what was consumed before growing, so the buffer holds at most one frame's worth
  // plus the new bytes.
  if (pos_ > 0) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  buffer_.append(bytes);
}

std::optional<Frame> FrameReader::next() {
  if (!error_.empty()) return std::nullopt;
  const std::size_t held = buffer_.size() - pos_;
  if (held < 4) return std::nullopt;
  const char* p = buffer_.data() + pos_;
  const std::uint64_t length = get_le(p, 4);
  if (length < 1 || length > kMaxFrame) {
    error_ = "frame length " + std::to_string(length) + " outside 1.." + std::to_string(kMaxFrame);
    return std::nullopt;
  }
  if (held < 4 + length) return std::nullopt;
  const auto type = static_cast<std::uint8_t>(p[4]);
  if (!type_name(type)) {
    error_ = "unknown frame type " + std::to_string(type);
    return std::nullopt;
  }
  pos_ += 4 + length;
  return Frame{static_cast<Type>(type), std::string_view(p + 5, length - 1)};
}

std::string FrameReader::take_rest() {
  std::string rest = buffer_.substr(pos_);
  buffer_.clear();
  pos_ = 0;
  return rest;
}

}  // namespace dshpty::frames
