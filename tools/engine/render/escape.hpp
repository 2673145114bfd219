// The one escape for values written into text (the text REPL, MCP results): a session's name,
// a cwd, a lost session's reason, an error message quoting what the caller sent. A value
// holding a newline or ESC would otherwise end or forge a status line ("x]\n[session: ...")
// or drive the reader's terminal; one holding NEL (U+0085) or U+2028/2029 would do the same
// for a client that splits lines on them, and a bidi control (U+202E and kin) makes the
// reader see the text in another order than it is. So: C0 controls and DEL become C-style
// escapes (\n, \r, \t, \e, \xHH); C1 controls, U+2028/2029 and the bidi controls (U+061C,
// U+200E/200F, U+202A..202E, U+2066..2069) become \uXXXX; a byte that is not UTF-8 becomes
// \xHH; a backslash is doubled. The escaped text reads back unambiguously.
#pragma once

#include <string>
#include <string_view>

namespace dshpty::render {

std::string escape(std::string_view value);
// `value` holds a character escape() would escape other than a backslash: a C0 or C1
// control, DEL, U+2028/2029, a bidi control, or a byte that is not UTF-8. Session names
// holding one are refused.
bool has_control(std::string_view value) noexcept;

}  // namespace dshpty::render
