// libvterm's parser and state layers do the terminal's work (escape sequences, cursor,
// margins, modes, replies, the keyboard); their callbacks draw into our Grid.
#include "screen/emulator.hpp"

#include <vterm.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "screen/cell_bytes.hpp"
#include "screen/grid.hpp"
#include "screen/plain_text_gate.hpp"
#include "text/head_tail_buffer.hpp"
#include "text/utf8.hpp"

namespace dshpty::screen {
namespace {

// A title longer than this is cut (a program may set anything).
constexpr std::size_t kMaxTitleBytes = 1024;
// A longer OSC or DCS string is fed through as it comes (and libvterm 0.1 loses its start).
constexpr std::size_t kMaxHeldString = 4096;
// What a result's text keeps of the rows scrolled off, until start_text() says otherwise.
constexpr std::size_t kDefaultTextBytes = 256u << 10;
constexpr std::size_t kPushBatch = 16u << 10;

// ESC ] 133 ; C ... with a field dshpty=<nonce> (text/sanitizer.hpp's marks).
bool command_mark(std::string_view osc, std::string_view nonce) {
  constexpr std::string_view kHead = "133;C";
  if (nonce.empty() || osc.substr(0, kHead.size()) != kHead) return false;
  osc.remove_prefix(kHead.size());
  if (!osc.empty() && osc.front() != ';') return false;
  while (!osc.empty()) {
    osc.remove_prefix(1);  // the ';'
    std::string_view field = osc.substr(0, osc.find(';'));
    if (field.substr(0, 7) == "dshpty=" && field.substr(7) == nonce) return true;
    osc.remove_prefix(field.size());
  }
  return false;
}

// Counts libvterm's heap (parser buffers, tab stops, line info) for memory_bytes(). Its
// allocator must return zeroed memory; a size header makes free's size known.
struct CountingAllocator {
  static void* allocate(std::size_t size, void* user) {
    auto* header = static_cast<std::size_t*>(std::calloc(1, size + sizeof(std::max_align_t)));
    if (header == nullptr) std::abort();  // as operator new would, rather than a null in libvterm
    *header = size;
    *static_cast<std::size_t*>(user) += size;
    return reinterpret_cast<char*>(header) + sizeof(std::max_align_t);
  }
  static void release(void* ptr, void* user) {
    if (ptr == nullptr) return;
    auto* header = reinterpret_cast<std::size_t*>(static_cast<char*>(ptr) - sizeof(std::max_align_t));
    *static_cast<std::size_t*>(user) -= *header;
    std::free(header);
  }
};

}  // namespace

struct Emulator::Impl {
  Impl(unsigned rows, unsigned cols, Reply reply_to) : main(rows, cols), reply(std::move(reply_to)) {
    allocator = {&CountingAllocator::allocate, &CountingAllocator::release};
    vt = vterm_new_with_allocator(static_cast<int>(rows), static_cast<int>(cols), &allocator, &vterm_bytes);
    vterm_set_utf8(vt, 1);
    vterm_output_set_callback(vt, &Impl::on_output, this);
    state = vterm_obtain_state(vt);
    vterm_state_set_callbacks(state, &kCallbacks, this);
#if !(VTERM_VERSION_MAJOR > 0 || VTERM_VERSION_MINOR >= 2)
    vterm_state_set_unrecognised_fallbacks(state, &kFallbacks, this);
#endif
    vterm_state_reset(state, 1);
  }
  ~Impl() { vterm_free(vt); }

  Grid& grid() { return alternate ? *alternate : main; }
  const Grid& grid() const { return alternate ? *alternate : main; }

  // --- libvterm's state callbacks ---
  static int putglyph(VTermGlyphInfo* info, VTermPos pos, void* user) {
    auto* self = static_cast<Impl*>(user);
    std::size_t count = 0;
    while (count < VTERM_MAX_CHARS_PER_CELL && info->chars[count] != 0) ++count;
    std::u32string_view chars(reinterpret_cast<const char32_t*>(info->chars), count);
    const auto width = static_cast<unsigned>(std::max(info->width, 1));
    Grid& grid = self->grid();
    // A glyph at the start of a row right after one that filled the margin wrapped: its row
    // continues the one above (any cursor move in between disarms this, movecursor).
    if (self->wrap_armed && pos.col == 0) grid.set_continued(static_cast<unsigned>(pos.row), true);
    self->wrap_armed = static_cast<unsigned>(pos.col) + width >= grid.cols();
    self->touch(static_cast<unsigned>(pos.row));
    grid.put(static_cast<unsigned>(pos.row), static_cast<unsigned>(pos.col), chars, width);
    return 1;
  }
  static int movecursor(VTermPos, VTermPos, int, void* user) {
    static_cast<Impl*>(user)->wrap_armed = false;
    return 1;
  }
  static int scrollrect(VTermRect rect, int downward, int rightward, void* user) {
    auto* self = static_cast<Impl*>(user);
    Grid& grid = self->grid();
    // Whole rows move by pointer; anything narrower falls back to moverect + erase.
    if (rightward != 0 || rect.start_col != 0 || static_cast<unsigned>(rect.end_col) != grid.cols()) return 0;
    if (downward > 0) self->grew = true;
    if (rect.start_row == 0 && static_cast<unsigned>(rect.end_row) == grid.rows() && downward > 0 &&
        &grid == &self->main) {
      self->push_rows(static_cast<unsigned>(downward));
    }
    grid.scroll(static_cast<unsigned>(rect.start_row), static_cast<unsigned>(rect.end_row), downward);
    return 1;
  }
  static int moverect(VTermRect dest, VTermRect src, void* user) {
    static_cast<Impl*>(user)->grid().move(to_rect(dest), to_rect(src));
    return 1;
  }
  static int erase(VTermRect rect, int, void* user) {
    static_cast<Impl*>(user)->grid().erase(to_rect(rect));
    return 1;
  }
  static int initpen(void*) { return 1; }
  static int setpenattr(VTermAttr, VTermValue*, void*) { return 1; }
  static int settermprop(VTermProp prop, VTermValue* value, void* user) {
    auto* self = static_cast<Impl*>(user);
    switch (prop) {
      case VTERM_PROP_CURSORVISIBLE:
        self->cursor_visible = value->boolean != 0;
        break;
      case VTERM_PROP_ALTSCREEN:
        // The alternate buffer exists only while shown: an idle shell pays nothing for it.
        if (value->boolean != (self->alternate != nullptr)) self->grew = true;
        if (value->boolean && !self->alternate) {
          // The normal screen's cursor, for its text while the other one shows.
          vterm_state_get_cursorpos(self->state, &self->main_cursor);
          self->wrap_armed = false;
          self->alternate = std::make_unique<Grid>(self->main.rows(), self->main.cols());
        } else if (!value->boolean) {
          self->alternate.reset();
        }
        break;
      case VTERM_PROP_TITLE:
        self->set_title(value);
        break;
      default:
        break;
    }
    return 1;
  }
  static int bell(void*) { return 1; }
  static int setlineinfo(int, const VTermLineInfo*, const VTermLineInfo*, void*) { return 1; }

  // The window changed size: the main screen keeps its bottom rows down to the cursor (or
  // the last written row) in view, as xterm does; the program redraws the alternate one.
  int on_resize(int rows, int cols, VTermPos* delta) {
    VTermPos cursor;
    vterm_state_get_cursorpos(state, &cursor);
    unsigned drop = 0;
    unsigned old_rows = main.rows();
    if (!alternate && static_cast<unsigned>(rows) < old_rows) {
      unsigned keep_to = static_cast<unsigned>(cursor.row) + 1;
      for (unsigned row = old_rows; row > keep_to; --row) {
        if (!main.blank_row(row - 1)) {
          keep_to = row;
          break;
        }
      }
      if (keep_to > static_cast<unsigned>(rows)) drop = keep_to - static_cast<unsigned>(rows);
    }
    // Rows dropped off the top leave as rows scrolled off do.
    if (drop > 0) push_rows(drop);
    main.resize(static_cast<unsigned>(rows), static_cast<unsigned>(cols), drop);
    if (alternate) alternate->resize(static_cast<unsigned>(rows), static_cast<unsigned>(cols), 0);
    delta->row -= static_cast<int>(drop);
    return 1;
  }
#if VTERM_VERSION_MAJOR > 0 || VTERM_VERSION_MINOR >= 3
  static int resize(int rows, int cols, VTermStateFields* fields, void* user) {
    VTermPos delta{0, 0};
    static_cast<Impl*>(user)->on_resize(rows, cols, &delta);
    fields->pos.row += delta.row;
    return 1;
  }
#else
  static int resize(int rows, int cols, VTermPos* delta, void* user) {
    return static_cast<Impl*>(user)->on_resize(rows, cols, delta);
  }
#endif

  static void on_output(const char* bytes, std::size_t length, void* user) {
    auto* self = static_cast<Impl*>(user);
    if (self->capture != nullptr) {
      self->capture->append(bytes, length);
    } else if (self->reply) {
      self->reply(std::string_view(bytes, length));
    }
  }

  // 0.2 hands a title over in fragments; 0.1 whole, as a C string.
  void set_title(VTermValue* value) {
#if VTERM_VERSION_MAJOR > 0 || VTERM_VERSION_MINOR >= 2
    const VTermStringFragment& fragment = value->string;
    if (fragment.initial) title.clear();
    title.append(fragment.str, std::min(fragment.len, kMaxTitleBytes - std::min(title.size(), kMaxTitleBytes)));
#else
    title.assign(value->string != nullptr ? value->string : "");
    if (title.size() > kMaxTitleBytes) title.resize(kMaxTitleBytes);
#endif
  }

  // The colour queries libvterm leaves unanswered (OSC 10/11 ; ?): vim asks both at start
  // and, on exit, waits for the answers it has not had. Light grey on black, like xterm's
  // defaults for a dark terminal.
#if !(VTERM_VERSION_MAJOR > 0 || VTERM_VERSION_MINOR >= 2)  // later ones: VTermStateFallbacks
  static int on_osc(const char* command, std::size_t length, void* user) {
    std::string_view osc(command, length);
    auto* self = static_cast<Impl*>(user);
    if (command_mark(osc, self->nonce)) {
      self->command_at = self->text_cursor();
      return 0;
    }
    if (osc == "10;?") return static_cast<Impl*>(user)->answer_colour(10);
    if (osc == "11;?") return static_cast<Impl*>(user)->answer_colour(11);
    return 0;
  }
  static constexpr VTermParserCallbacks kFallbacks = {
      nullptr, nullptr, nullptr, nullptr, &on_osc, nullptr, nullptr,
  };
#endif
  int answer_colour(int which) {
    std::string_view answer = which == 10 ? "\x1b]10;rgb:c0c0/c0c0/c0c0\x1b\\" : "\x1b]11;rgb:0000/0000/0000\x1b\\";
    on_output(answer.data(), answer.size(), this);
    return 1;
  }

  static Rect to_rect(VTermRect r) {
    return Rect{static_cast<unsigned>(r.start_row), static_cast<unsigned>(r.end_row),
                static_cast<unsigned>(r.start_col), static_cast<unsigned>(r.end_col)};
  }

  static constexpr VTermStateCallbacks kCallbacks = {
      &putglyph, &movecursor, &scrollrect, &moverect, &erase, &initpen,
      &setpenattr, &settermprop, &bell, &resize, &setlineinfo,
  };

  // Result text (emulator.hpp).
  void touch(unsigned row) {
    if (static_cast<int>(row) > reach) grew = true;
    if (alternate) return;
    const std::uint64_t at = pushed + row;
    if (at < touched) touched = at;
  }
  TextPos text_from() const { return touched < start.row ? TextPos{touched, 0} : start; }
  TextPos text_cursor() const {
    VTermPos pos = main_cursor;
    if (!alternate) vterm_state_get_cursorpos(state, &pos);
    return TextPos{pushed + static_cast<std::uint64_t>(std::max(pos.row, 0)), static_cast<unsigned>(std::max(pos.col, 0))};
  }
  // The normal screen's top `count` rows scroll off: what of them the result text holds
  // goes to the log, each row joined to the one before it when it continues it. A flood
  // pushes a row per line, so the common row (blanks and printable ASCII) is copied
  // straight into the batch, a byte per cell; the log takes the batch whole.
  void push_rows(unsigned count) {
    const unsigned rows = main.rows();
    const unsigned cols = main.cols();
    const TextPos from = text_from();
    // The rows before the start are not the text's.
    unsigned k = from.row > pushed ? static_cast<unsigned>(std::min<std::uint64_t>(from.row - pushed, count)) : 0;
    for (const unsigned end = std::min(count, rows); k < end; ++k) {
      char* out = batch_room(cols + 1);
      if (log_started && !main.continued(k)) {
        *out++ = '\n';
        ++batch_lines;
      }
      log_started = true;
      const bool next_continues = k + 1 < rows && main.continued(k + 1);
      const unsigned col = pushed + k == from.row ? from.col : 0;
      const int length = main.plain_text(k, col, next_continues, out);
      if (length >= 0) {
        batch_size = static_cast<std::size_t>(out + length - batch.data());
        continue;
      }
      batch_size = static_cast<std::size_t>(out - batch.data());
      row.clear();
      main.row_text(k, col, next_continues, 0, row);
      std::memcpy(batch_room(row.size()), row.data(), row.size());
      batch_size += row.size();
    }
    pushed += count;
  }
  // Where `bytes` more go in the batch (the log takes what it holds first when they would
  // not fit).
  char* batch_room(std::size_t bytes) {
    if (batch_size + bytes > batch.size()) {
      flush_log();
      if (bytes > batch.size()) batch.resize(std::max(bytes, kPushBatch));
    }
    return batch.data() + batch_size;
  }
  void flush_log() {
    log.append(std::string_view(batch.data(), batch_size), batch_lines);
    batch_size = 0;
    batch_lines = 0;
  }
  void tab();
  void feed(std::string_view bytes);
  std::size_t slow_span(std::string_view bytes);
  std::size_t plain_run(std::string_view bytes);

  Grid main;
  std::unique_ptr<Grid> alternate;
  // Result text: rows of the normal screen scrolled off so far (a row's number is this plus
  // its place on the screen), the text's start, the first row written above it since, and
  // the text of the rows scrolled off since the start.
  std::uint64_t pushed = 0;
  TextPos start;
  std::uint64_t touched = UINT64_MAX;
  text::HeadTailBuffer log{kDefaultTextBytes / 3, kDefaultTextBytes - kDefaultTextBytes / 3};
  std::size_t log_bytes = kDefaultTextBytes;
  bool log_started = false;
  // Rows pushed, not yet in the log (flush_log): its first batch_size bytes.
  std::string batch;
  std::size_t batch_size = 0;
  std::size_t batch_lines = 0;  // the newlines among them
  std::string row;  // a row that is not plain, read cell by cell
  VTermPos main_cursor{0, 0};  // the normal screen's, while the alternate one shows
  bool wrap_armed = false;     // the last glyph filled the margin (putglyph)
  std::string nonce;
  std::optional<TextPos> command_at;  // the latest command-start mark's position
  // Growth (Emulator::take_growth): the last row written on the screen showing when the
  // current read began, and whether output since the last take went past it or scrolled.
  int reach = -1;
  bool grew = false;
  PlainTextGate gate;
  std::string held;  // a character split across reads: libvterm 0.1 garbles those
  Reply reply;
  std::string* capture = nullptr;  // encode() collects the keyboard's bytes here
  bool cursor_visible = true;
  std::string title;
  std::size_t vterm_bytes = 0;
  VTermAllocatorFunctions allocator{};
  VTerm* vt = nullptr;
  VTermState* state = nullptr;
};

Emulator::Emulator(unsigned rows, unsigned cols, Reply reply)
    : impl_(std::make_unique<Impl>(rows, cols, std::move(reply))) {}

Emulator::~Emulator() = default;

namespace {

bool plain_byte(unsigned char byte) { return (byte >= 0x20 && byte < 0x7F) || byte == '\r' || byte == '\n'; }

// `value` in decimal at `out`; the end.
char* decimal(char* out, unsigned value) {
  char digits[10];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

}  // namespace

// A tab through libvterm, which moves the cursor: the grid remembers the blanks it crossed
// as a tab, so a result's text has the tab the output wrote.
void Emulator::Impl::tab() {
  VTermPos before, after;
  vterm_state_get_cursorpos(state, &before);
  gate.step('\t', grid().rows());
  vterm_input_write(vt, "\t", 1);
  vterm_state_get_cursorpos(state, &after);
  if (after.row == before.row && after.col > before.col) {
    touch(static_cast<unsigned>(before.row));
    grid().mark_tab(static_cast<unsigned>(before.row), static_cast<unsigned>(before.col),
                    static_cast<unsigned>(after.col));
  }
}

void Emulator::Impl::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    if (bytes[0] == '\t' && gate.between_sequences()) {
      tab();
      bytes.remove_prefix(1);
      continue;
    }
    std::size_t taken = plain_run(bytes);
    if (taken == 0) taken = slow_span(bytes);
    bytes.remove_prefix(taken);
  }
}

// Through libvterm, up to where a plain run could start again: at least one byte, fewer
// only when the chunk ends inside a character, which waits in `held` for the next read.
std::size_t Emulator::Impl::slow_span(std::string_view bytes) {
  std::size_t end = 0;
  unsigned rows = grid().rows();
  // Where the last escape began, and the gate before it: a string the read ends in waits
  // whole for the next read (below).
  std::size_t escape_at = std::string_view::npos;
  PlainTextGate before_escape;
  do {
    auto byte = static_cast<unsigned char>(bytes[end]);
    if (byte == 0x1B && !gate.in_string()) {
      escape_at = end;
      before_escape = gate;
    }
    unsigned length = utf8::lead(byte).length;
    if (gate.between_sequences() && length > 1 && end + length > bytes.size()) {
      std::size_t rest = end + 1;
      while (rest < bytes.size() && utf8::is_continuation(static_cast<unsigned char>(bytes[rest]))) ++rest;
      if (rest == bytes.size()) {  // a character still arriving
        held.assign(bytes.substr(end));
        if (end > 0) vterm_input_write(vt, bytes.data(), end);
        return bytes.size();
      }
    }
    gate.step(byte, rows);
    ++end;
  } while (end < bytes.size() &&
           !(gate.between_sequences() &&
             ((plain_byte(static_cast<unsigned char>(bytes[end])) && gate.plain(rows)) || bytes[end] == '\t')));
  if (end == bytes.size() && gate.in_string() && escape_at != std::string_view::npos &&
      end - escape_at < kMaxHeldString) {
    // libvterm 0.1 forgets the part of a string fed before the write that ends it (a title
    // split across reads would come out empty): keep it for the next read.
    gate = before_escape;
    held.assign(bytes.substr(escape_at));
    if (escape_at > 0) vterm_input_write(vt, bytes.data(), escape_at);
    return bytes.size();
  }
  vterm_input_write(vt, bytes.data(), end);
  return end;
}

// Writes a leading run of printable ASCII, CR and LF into the grid directly, where libvterm
// would have put it, then moves libvterm's cursor to the run's end. 0 when it may not.
std::size_t Emulator::Impl::plain_run(std::string_view bytes) {
  Grid& g = grid();
  unsigned rows = g.rows(), cols = g.cols();
  if (!gate.between_sequences() || !plain_byte(static_cast<unsigned char>(bytes[0])) || !gate.plain(rows)) return 0;
  VTermPos pos;
  vterm_state_get_cursorpos(state, &pos);
  // libvterm's pending wrap is invisible; it can only be pending in the last two columns.
  if (cols < 3 || static_cast<unsigned>(pos.col) + 2 >= cols) return 0;
  // libvterm 0.1 can leave its cursor below the last row after a shrink (random bytes,
  // then a resize): the grid has no such row, so libvterm places the run itself.
  if (pos.row < 0 || static_cast<unsigned>(pos.row) >= rows) return 0;
  auto row = static_cast<unsigned>(pos.row), col = static_cast<unsigned>(pos.col);
  std::size_t at = 0;
  while (at < bytes.size()) {
    auto byte = static_cast<unsigned char>(bytes[at]);
    if (byte == '\n') {
      if (row + 1 == rows) {
        grew = true;
        if (&g == &main) push_rows(1);
        g.scroll(0, rows, 1);
      } else {
        ++row;
      }
      ++at;
    } else if (byte == '\r') {
      col = 0;
      ++at;
    } else if (byte >= 0x20 && byte < 0x7F) {
      const std::size_t end = at + printable_prefix(bytes.data() + at, bytes.size() - at);
      // The last character before a possible combining mark (any non-ASCII byte, or the
      // end of this read) goes through libvterm, which must know it to combine.
      bool leave_last = end == bytes.size() || static_cast<unsigned char>(bytes[end]) >= 0x80;
      std::size_t count = end - at - (leave_last ? 1 : 0);
      // Never the last column: writing there sets libvterm's pending wrap.
      bool room = col + count <= cols - 1;
      if (!room) count = col < cols - 1 ? cols - 1 - col : 0;
      if (count > 0) touch(row);
      g.put_ascii(row, col, bytes.substr(at, count));
      col += static_cast<unsigned>(count);
      at += count;
      if (!room || leave_last) break;
    } else {
      break;
    }
  }
  if (at == 0) return 0;
  // CUP to the run's end, formatted by hand: snprintf was a tenth of a flood's time.
  char move[32];
  char* end = move;
  *end++ = '\x1b';
  *end++ = '[';
  end = decimal(end, row + 1);
  *end++ = ';';
  end = decimal(end, col + 1);
  *end++ = 'H';
  vterm_input_write(vt, move, static_cast<std::size_t>(end - move));
  return at;
}

void Emulator::on_bytes(std::string_view raw) {
  impl_->command_at.reset();
  if (raw.empty()) return;
  // A scan up from the bottom row: one row on a full screen (a flood), a few on a fresh one.
  if (!impl_->grew) impl_->reach = impl_->grid().last_written_row();
  if (impl_->held.empty()) {
    impl_->feed(raw);
    return;
  }
  std::string joined = std::move(impl_->held) + std::string(raw);
  impl_->held.clear();
  impl_->feed(joined);
}

void Emulator::resize(unsigned rows, unsigned cols) {
  vterm_set_size(impl_->vt, static_cast<int>(rows), static_cast<int>(cols));
  impl_->gate.resize(rows);
}

ScreenSnapshot Emulator::snapshot() const {
  ScreenSnapshot shot;
  const Grid& grid = impl_->grid();
  shot.rows = grid.rows();
  shot.cols = grid.cols();
  shot.lines = grid.lines();
  VTermPos cursor;
  vterm_state_get_cursorpos(impl_->state, &cursor);
  shot.cursor_row = static_cast<unsigned>(std::clamp(cursor.row, 0, static_cast<int>(grid.rows()) - 1));
  shot.cursor_col = static_cast<unsigned>(std::clamp(cursor.col, 0, static_cast<int>(grid.cols()) - 1));
  shot.cursor_visible = impl_->cursor_visible;
  shot.alternate = impl_->alternate != nullptr;
  shot.title = impl_->title;
  return shot;
}

bool Emulator::alternate() const noexcept { return impl_->alternate != nullptr; }

bool Emulator::take_growth() noexcept { return std::exchange(impl_->grew, false); }

Emulator::TextPos Emulator::text_cursor() const noexcept { return impl_->text_cursor(); }

void Emulator::start_text(TextPos from, std::size_t bytes) {
  Impl& m = *impl_;
  if (bytes > 0 && bytes != m.log_bytes) {
    m.log = text::HeadTailBuffer(bytes / 3, bytes - bytes / 3);
    m.log_bytes = bytes;
  }
  m.log.clear();
  m.batch_size = 0;
  m.batch_lines = 0;
  m.log_started = false;
  m.touched = UINT64_MAX;
  // A start that scrolled off already is the screen's top.
  m.start = from.row < m.pushed ? TextPos{m.pushed, 0} : from;
}

text::Cut Emulator::result_text(std::string_view before, std::size_t cap) {
  Impl& m = *impl_;
  m.flush_log();
  const Grid& main = m.main;
  VTermPos cursor = m.main_cursor;
  if (!m.alternate) vterm_state_get_cursorpos(m.state, &cursor);
  const TextPos from = m.text_from();
  unsigned first = 0, col = 0;
  if (from.row >= m.pushed) {
    first = static_cast<unsigned>(from.row - m.pushed);
    col = from.col;
  }
  const int last = std::max(cursor.row, main.last_written_row());
  std::string screen;
  bool started = m.log_started;
  for (int r = static_cast<int>(first); r <= last; ++r) {
    const auto row = static_cast<unsigned>(r);
    if (started && !main.continued(row)) screen += '\n';
    const bool next_continues = r < last && main.continued(row + 1);
    const unsigned min_end = r == last && r == cursor.row ? static_cast<unsigned>(cursor.col) : 0;
    main.row_text(row, row == first ? col : 0, next_continues, min_end, screen);
    started = true;
  }
  return m.log.cut(cap, before, screen);
}

bool Emulator::on_screen(TextPos pos) const noexcept { return pos.row >= impl_->pushed; }

void Emulator::set_mark_nonce(std::string nonce) { impl_->nonce = std::move(nonce); }

std::optional<Emulator::TextPos> Emulator::command_start() const noexcept { return impl_->command_at; }

namespace {

VTermModifier modifiers(const Key& key) {
  int mod = VTERM_MOD_NONE;
  if (key.shift) mod |= VTERM_MOD_SHIFT;
  if (key.alt) mod |= VTERM_MOD_ALT;
  if (key.ctrl) mod |= VTERM_MOD_CTRL;
  return static_cast<VTermModifier>(mod);
}

VTermKey vterm_key(Key::Name name) {
  switch (name) {
    case Key::Name::enter: return VTERM_KEY_ENTER;
    case Key::Name::escape: return VTERM_KEY_ESCAPE;
    case Key::Name::tab: return VTERM_KEY_TAB;
    case Key::Name::backspace: return VTERM_KEY_BACKSPACE;
    case Key::Name::up: return VTERM_KEY_UP;
    case Key::Name::down: return VTERM_KEY_DOWN;
    case Key::Name::left: return VTERM_KEY_LEFT;
    case Key::Name::right: return VTERM_KEY_RIGHT;
    case Key::Name::home: return VTERM_KEY_HOME;
    case Key::Name::end: return VTERM_KEY_END;
    case Key::Name::page_up: return VTERM_KEY_PAGEUP;
    case Key::Name::page_down: return VTERM_KEY_PAGEDOWN;
    case Key::Name::insert: return VTERM_KEY_INS;
    case Key::Name::del: return VTERM_KEY_DEL;
    default: break;
  }
  int n = static_cast<int>(name) - static_cast<int>(Key::Name::f1) + 1;
  return static_cast<VTermKey>(VTERM_KEY_FUNCTION(n));
}

}  // namespace

std::string Emulator::encode(const std::vector<Key>& keys) {
  std::string out;
  impl_->capture = &out;
  for (const Key& key : keys) {
    if (key.kind == Key::Kind::named) {
      vterm_keyboard_key(impl_->vt, vterm_key(key.name), modifiers(key));
      continue;
    }
    if (key.ctrl) {
      // The control byte itself, as xterm and tmux send it: libvterm would encode C-i,
      // C-m, C-[ and C-? as CSI u sequences few programs read.
      char32_t c = key.character;
      char byte = c == U'?' ? '\x7f' : static_cast<char>((c >= U'a' && c <= U'z' ? c - 0x20 : c) & 0x1F);
      if (key.alt) out += '\x1b';
      out += byte;
      continue;
    }
    vterm_keyboard_unichar(impl_->vt, static_cast<uint32_t>(key.character), modifiers(key));
  }
  impl_->capture = nullptr;
  return out;
}

std::size_t Emulator::memory_bytes() const noexcept {
  return sizeof(Impl) + impl_->vterm_bytes + impl_->main.memory_bytes() + impl_->log.memory_bytes() +
         impl_->batch.capacity() + impl_->row.capacity() +
         (impl_->alternate ? impl_->alternate->memory_bytes() : 0) + impl_->title.capacity();
}

}  // namespace dshpty::screen
