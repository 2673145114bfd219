// The one escape for values written into text (the text REPL, MCP results): a session's name,
// a cwd, a lost session's reason, an error message quoting what the caller sent. A value
// holding a newline or ESC would otherwise end or forge a status line ("x]\n[session: ...")
// or drive the reader's terminal. Control characters (C0, DEL) become C-style escapes
// (\n, \r, \t, \e, \xHH) and a backslash is doubled, so the escaped text reads back unambiguously.
#pragma once

#include <string>
#include <string_view>

namespace dshpty::render {

std::string escape(std::string_view value);
// `value` holds a C0 control character or DEL.
bool has_control(std::string_view value) noexcept;

}  // namespace dshpty::render
