// What `dshpty-repl watch` draws for one frame (docs/watch.md): the session's screen as its
// emulator holds it, clipped to the person's terminal (the rows around the cursor when the
// session is taller), and one status line at the bottom: owner, session, busy or at the
// prompt (the job's command, for how long), the session's size, and whether it is clipped.
// Pure: a frame and a terminal size in, the bytes that redraw the whole terminal out.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dshpty::watch {

struct TermSize {
  unsigned rows = 24;
  unsigned cols = 80;
};

// The status line's text (no escapes), at most `cols` columns.
std::string status_text(const nlohmann::json& frame, TermSize term);
// The bytes that redraw `term` for `frame`: the rows shown, blanks below, the status line in
// reverse video on the last row, and the cursor where the session's is (hidden when it is
// outside what is shown, or the session hides it).
std::string render_frame(const nlohmann::json& frame, TermSize term);
// `text` cut to at most `cols` display columns (UTF-8; a wide character counts two).
std::string clip_columns(const std::string& text, unsigned cols);

}  // namespace dshpty::watch
