#include "text/sanitizer.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "text/utf8.hpp"

namespace dshpty::text {
namespace {

using Byte = unsigned char;

using utf8::kReplacement;
constexpr Byte kBel = 0x07, kEsc = 0x1B, kCan = 0x18, kSub = 0x1A;

// Bytes that pass through ground state unchanged, one at a time: the bulk run.
constexpr std::array<bool, 256> kPlain = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x7F; ++c) t[c] = true;
  t['\n'] = t['\t'] = true;
  return t;
}();

using utf8::Lead;

// The length of a valid character wholly inside [p, end), or 0: the fast path. Anything
// else (invalid, or cut by the chunk's end) goes to the incremental decoder.
inline std::size_t whole_character(const Byte* p, const Byte* end) noexcept {
  const Lead lead = utf8::lead(*p);
  if (lead.length == 0 || end - p < lead.length) return 0;
  if (p[1] < lead.lo || p[1] > lead.hi) return 0;
  for (int i = 2; i < lead.length; ++i)
    if (!utf8::is_continuation(p[i])) return 0;
  return lead.length;
}

// Eight bytes at a time: are they all printable ASCII (0x20-0x7E)? The bulk of terminal
// output is, so the ground state skips such words without a table lookup per byte.
inline bool all_printable(const Byte* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  const std::uint64_t below_space = (w - ones * 0x20) & ~w;   // high bit set where byte < 0x20
  const std::uint64_t above_tilde = (w + ones * (0x7F - 0x7E)) | w;  // high bit where byte > 0x7E
  return ((below_space | above_tilde) & highs) == 0;
}

inline void append(std::string& text, const Byte* from, const Byte* to) {
  if (from != to) text.append(reinterpret_cast<const char*>(from), static_cast<std::size_t>(to - from));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoding; false on a malformed escape.
bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (in.size() - i < 3) return false;
    const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// ESC ] 133 ; <kind> [; <field>]... with a field dshpty=<nonce>: a mark (sanitizer.hpp).
bool parse_marker(std::string_view payload, std::string_view nonce, PromptMarker& mark) {
  constexpr std::string_view kHead = "133;";
  if (nonce.empty() || payload.size() < kHead.size() + 1 || payload.substr(0, kHead.size()) != kHead)
    return false;
  mark.kind = payload[kHead.size()];
  if (mark.kind != 'A' && mark.kind != 'B' && mark.kind != 'C' && mark.kind != 'D' && mark.kind != 'P' &&
      mark.kind != 'L')
    return false;
  std::string_view rest = payload.substr(kHead.size() + 1);
  if (!rest.empty() && rest.front() != ';') return false;
  mark.status.reset();
  mark.cwd.clear();
  mark.prompt_count.clear();
  mark.line_state.clear();
  bool nonce_seen = false, first = true;
  while (!rest.empty()) {
    rest.remove_prefix(1);  // the ';'
    const std::size_t end = rest.find(';');
    const std::string_view field = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    constexpr std::string_view kNonce = "dshpty=", kCwd = "cwd=", kCount = "n=", kState = "state=";
    if (field.substr(0, kNonce.size()) == kNonce) {
      nonce_seen = field.substr(kNonce.size()) == nonce;
      if (!nonce_seen) return false;
    } else if (mark.kind == 'D' && first && !field.empty() && field.size() <= 9 &&
               field.find_first_not_of("0123456789") == std::string_view::npos) {
      int value = 0;
      for (char c : field) value = value * 10 + (c - '0');
      mark.status = value;
    } else if (mark.kind == 'P' && field.substr(0, kCwd.size()) == kCwd) {
      if (!percent_decode(field.substr(kCwd.size()), mark.cwd)) return false;
    } else if (mark.kind == 'P' && field.substr(0, kCount.size()) == kCount) {
      mark.prompt_count = field.substr(kCount.size());
    } else if ((mark.kind == 'L' || mark.kind == 'P') && field.substr(0, kState.size()) == kState) {
      mark.line_state = field.substr(kState.size());
    }
    first = false;
  }
  return nonce_seen;
}

}  // namespace

void Sanitizer::feed(std::string_view bytes, SanitizedText& out) {
  const Byte* p = reinterpret_cast<const Byte*>(bytes.data());
  const Byte* const end = p + bytes.size();
  while (p < end) {
    switch (state_) {
      case State::ground: p = ground(p, end, out); break;
      case State::escape: p = escape(p); break;
      case State::intermediate: p = intermediate(p); break;
      case State::csi: p = csi(p, end, out); break;
      case State::string: p = string(p, end, out); break;
      case State::string_escape: p = string_escape(p, out); break;
    }
  }
}

void Sanitizer::finish(SanitizedText& out) {
  if (cr_pending_) {
    out.text.push_back(kReturn);
    out.line_controls = true;
  }
  if (utf8_need_ != 0) out.text.append(kReplacement);
  cr_pending_ = false;
  utf8_have_ = utf8_need_ = 0;
  state_ = State::ground;
  string_length_ = 0;
  last_prompt_count_.clear();
}

// Precondition: p < end.
const Sanitizer::Byte* Sanitizer::ground(const Byte* p, const Byte* end, SanitizedText& out) {
  std::string& text = out.text;
  if (cr_pending_) {
    cr_pending_ = false;
    if (*p == '\n') {
      text.push_back('\n');
      return p + 1;
    }
    text.push_back(kReturn);
    out.line_controls = true;
  }
  if (utf8_need_ != 0) {
    p = utf8_continue(p, end, text);
    if (utf8_need_ != 0) return p;  // still incomplete: the chunk ran out
  }
  const Byte* run = p;
  while (p < end) {
    while (end - p >= 8 && all_printable(p)) p += 8;
    if (p == end) break;
    const Byte c = *p;
    if (kPlain[c]) {
      ++p;
      continue;
    }
    if (c >= 0x80) {
      if (std::size_t n = whole_character(p, end)) {
        p += n;
        continue;
      }
      append(text, run, p);
      p = utf8_start(p, end, text);
      run = p;
      continue;
    }
    append(text, run, p);
    if (c == '\r') {
      if (p + 1 == end) {
        cr_pending_ = true;  // is it CR LF? The next chunk says.
        return end;
      }
      if (p[1] == '\n') {  // CR LF: drop the CR, and the LF starts the next run
        run = ++p;
        ++p;
        continue;
      }
      text.push_back(kReturn);
      out.line_controls = true;
      ++p;
    } else if (c == kEsc) {
      // The common case, a whole CSI (colours, cursor moves) inside this chunk, is skipped
      // here; anything else goes through the escape states.
      const Byte* q = p + 1;
      if (q < end && *q == '[') {
        ++q;
        const Byte* params = q;
        while (q < end && *q >= 0x20 && *q <= 0x3F) ++q;
        if (q < end && *q >= 0x40 && *q <= 0x7E) {
          if (*q == 'K' || *q == 'G' || *q == 'D' || *q == 'C')
            line_control(static_cast<char>(*q), std::string_view(reinterpret_cast<const char*>(params), q - params), out);
          p = q + 1;
          run = p;
          continue;
        }
      }
      state_ = State::escape;
      return p + 1;
    } else if (c == '\b') {
      text.push_back(kBackspace);
      out.line_controls = true;
      ++p;
    } else {
      ++p;  // BEL, other C0 controls, DEL: dropped
    }
    run = p;
  }
  append(text, run, p);
  return p;
}

const Sanitizer::Byte* Sanitizer::utf8_start(const Byte* p, const Byte* end, std::string& text) {
  const Lead lead = utf8::lead(*p);
  if (lead.length == 0) {  // a stray continuation byte, C0/C1 leads, F5..FF
    text.append(kReplacement);
    return p + 1;
  }
  utf8_bytes_[0] = *p;
  utf8_have_ = 1;
  utf8_need_ = lead.length;
  return utf8_continue(p + 1, end, text);
}

const Sanitizer::Byte* Sanitizer::utf8_continue(const Byte* p, const Byte* end, std::string& text) {
  while (utf8_have_ < utf8_need_) {
    if (p == end) return p;
    const Lead lead = utf8::lead(utf8_bytes_[0]);
    const Byte lo = utf8_have_ == 1 ? lead.lo : 0x80;
    const Byte hi = utf8_have_ == 1 ? lead.hi : 0xBF;
    if (*p < lo || *p > hi) {
      // The bytes so far are a maximal ill-formed subpart: one U+FFFD, and the byte that
      // broke it is read afresh (it may start a character, or be ESC).
      text.append(kReplacement);
      utf8_have_ = utf8_need_ = 0;
      return p;
    }
    utf8_bytes_[utf8_have_++] = *p++;
  }
  text.append(reinterpret_cast<const char*>(utf8_bytes_), utf8_need_);
  utf8_have_ = utf8_need_ = 0;
  return p;
}

const Sanitizer::Byte* Sanitizer::escape(const Byte* p) {
  const Byte c = *p;
  switch (c) {
    case '[':
      state_ = State::csi;
      csi_params_length_ = 0;
      return p + 1;
    case ']': start_string(true); return p + 1;
    case 'P': case 'X': case '^': case '_': start_string(false); return p + 1;
    case kEsc: return p + 1;  // the first ESC led nowhere; this one starts afresh
    case kCan: case kSub: state_ = State::ground; return p + 1;
    default: break;
  }
  if (c >= 0x20 && c <= 0x2F) {
    state_ = State::intermediate;
    return p + 1;
  }
  state_ = State::ground;
  if (c >= 0x30 && c <= 0x7E) return p + 1;  // a two-byte escape: dropped
  return p;  // not an escape after all: the byte is text (or a control) again
}

const Sanitizer::Byte* Sanitizer::intermediate(const Byte* p) {
  const Byte c = *p;
  if (c >= 0x20 && c <= 0x2F) return p + 1;
  if (c == kEsc) {
    state_ = State::escape;
    return p + 1;
  }
  state_ = State::ground;
  if ((c >= 0x30 && c <= 0x7E) || c == kCan || c == kSub) return p + 1;
  return p;
}

const Sanitizer::Byte* Sanitizer::csi(const Byte* p, const Byte* end, SanitizedText& out) {
  // Parameters and intermediates; the first few are kept, for an erase in line.
  for (; p < end && *p >= 0x20 && *p <= 0x3F; ++p) {
    if (csi_params_length_ < sizeof csi_params_) csi_params_[csi_params_length_] = static_cast<char>(*p);
    ++csi_params_length_;
  }
  if (p == end) return p;
  const Byte c = *p;
  if (c == kEsc) {
    state_ = State::escape;
    return p + 1;
  }
  state_ = State::ground;
  if ((c == 'K' || c == 'G' || c == 'D' || c == 'C') && csi_params_length_ <= sizeof csi_params_)
    line_control(static_cast<char>(c), std::string_view(csi_params_, csi_params_length_), out);
  if ((c >= 0x40 && c <= 0x7E) || c == kCan || c == kSub) return p + 1;
  return p;
}

void Sanitizer::line_control(char final, std::string_view params, SanitizedText& out) {
  if (final == 'K') return erase_in_line(params, out);
  // CHA, CUB, CUF: a count of at most 4 digits (0 or none is 1).
  std::size_t n = 0;
  for (char d : params) {
    if (d < '0' || d > '9') return;  // private or several parameters: not these
    n = n * 10 + static_cast<std::size_t>(d - '0');
  }
  if (n == 0) n = 1;
  if (final == 'G') {
    if (n - 1 > kMaxCursorMove) return;
    out.text.push_back(kReturn);  // column n: the row's start, then n - 1 forward
    out.text.append(n - 1, kCursorForward);
  } else if (final == 'D') {
    // n columns back, never past the row's start; `ESC [ 999 D` is the idiom for it.
    if (n <= kMaxCursorMove) out.text.append(n, kBackspace);
    else out.text.push_back(kReturn);
  } else {
    if (n > kMaxCursorMove) return;  // `ESC [ 999 C`, to the margin: the line's width is not known
    out.text.append(n, kCursorForward);
  }
  out.line_controls = true;
}

void Sanitizer::erase_in_line(std::string_view params, SanitizedText& out) {
  // EL: no parameter or 0 erases from the cursor to the end of the line, 2 the whole line.
  // (1, from the start to the cursor, is left alone: a redraw writes over it anyway.)
  if (params.empty() || params == "0") {
    out.text.push_back(kEraseToEnd);
    out.line_controls = true;
  } else if (params == "2") {
    out.text.push_back(kEraseLine);
    out.line_controls = true;
  }
}

void Sanitizer::start_string(bool osc) noexcept {
  state_ = State::string;
  string_is_osc_ = osc;
  string_length_ = 0;
  osc_kept_.clear();
}

const Sanitizer::Byte* Sanitizer::string(const Byte* p, const Byte* end, SanitizedText& out) {
  while (p < end) {
    const Byte c = *p;
    if (c == kBel) {
      end_string(out);
      return p + 1;
    }
    if (c == kEsc) {
      state_ = State::string_escape;
      return p + 1;
    }
    if (c == kCan || c == kSub) {
      state_ = State::ground;
      return p + 1;
    }
    if (string_length_ < config_.escape_cap && string_is_osc_) osc_kept_.push_back(static_cast<char>(c));
    ++string_length_;
    ++p;
  }
  return p;
}

const Sanitizer::Byte* Sanitizer::string_escape(const Byte* p, SanitizedText& out) {
  const Byte c = *p;
  if (c == '\\') {
    end_string(out);
    return p + 1;
  }
  if (c == ']') {
    start_string(true);
    return p + 1;
  }
  // A false terminator: the ESC is payload, and the byte after it is read as payload
  // (or as BEL/CAN/SUB/ESC) again.
  if (string_length_ < config_.escape_cap && string_is_osc_) osc_kept_.push_back(static_cast<char>(kEsc));
  ++string_length_;
  if (c == kEsc) return p + 1;
  state_ = State::string;
  return p;
}

void Sanitizer::end_string(SanitizedText& out) {
  state_ = State::ground;
  if (!string_is_osc_ || string_length_ > config_.escape_cap) return;
  PromptMarker mark;
  if (parse_marker(osc_kept_, config_.mark_nonce, mark)) {
    if (mark.kind == 'P' && !mark.prompt_count.empty()) {
      if (mark.prompt_count == last_prompt_count_) return;  // the same prompt, repainted
      last_prompt_count_ = mark.prompt_count;
    }
    mark.position = out.text.size();
    out.markers.push_back(std::move(mark));
  }
}

}  // namespace dshpty::text
