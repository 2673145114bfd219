// A multi-line send's echo, told in one line. Typed at the shell's idle prompt, a heredoc or
// a loop of N lines comes back as the shell echoed it (the first line, then each further one
// behind the continuation prompt), before any output: a 100-line heredoc returns its whole
// echo. When the shell read every line as one command (N-1 continuation marks, then the
// command's start, nothing else between) and the screen shows exactly the lines typed, the
// result has the line typed_line(N, M) in their place (docs/shell-backend.md, "Marks").
// Pure: no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dshpty::shell {

// The number of lines of `text` when it is a multi-line send whose echo may be told in one
// line: two or more lines (LF between them, no CR, not ending in a line break), each
// printable (or empty). 0 otherwise.
std::size_t typed_line_count(std::string_view text);

// "[typed N lines, M bytes]": the line standing for the echo (text faces spare it, as they
// spare the truncation marker; output that prints it is marked).
std::string typed_line(std::size_t lines, std::size_t bytes);

// Whether `screen` (the result text at the command's start) is `before` (what it showed
// before the echo), then `typed`'s first line, then each further line behind one and the
// same continuation prompt, each ended by a line break. What follows is the command's.
bool echoed_as_typed(std::string_view screen, std::string_view before, std::string_view typed);

}  // namespace dshpty::shell
