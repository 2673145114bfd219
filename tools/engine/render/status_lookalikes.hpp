// Output that imitates our status lines. On a text face a result is output followed by lines
// of ours ("[wait: stdin_read]", "[exit: 0]", "[cwd: /tmp]", "[session: running]", ...); a
// program that prints such a line would make its reader believe the send ended (and the
// next send, a secret, go to the program). So every output line that looks like one of ours
// gets a backslash in front: "\[wait: stdin_read]" is output, never a status, and no line of
// output ever starts with "[" and one of our words (docs/tool-protocol.md, "Output that looks
// like a status line").
//
// "Looks like" is generous on purpose: the check skips blanks and invisible characters (a
// BOM, zero-width and bidi characters, C0/C1 controls), takes the fullwidth bracket for "[",
// ignores case, and starts a line after every line end some reader splits on (LF, CR, VT,
// FF, NEL, U+2028, U+2029; and after a backspace, which a terminal draws over), so "  [wait:", "\uFEFF[wait:", "x\u2028[wait:" are all marked.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace dshpty::render {

// `line` (one line, no line end) would read as one of our status lines.
bool looks_like_status(std::string_view line) noexcept;

// `text` with a backslash before every line that looks like a status line, except the
// first line equal to each of `spared` (our own lines the backend put in the text: the
// truncation marker, a multi-line send's "[typed ...]"). An empty one spares nothing.
std::string mark_status_lookalikes(std::string_view text, std::initializer_list<std::string_view> spared = {});

}  // namespace dshpty::render
