// `dshpty-repl --print-fields` (hidden: for tests): the one field table of each protocol
// (field_table.hpp) as JSON, so a test can hold the clients' option lists and the MCP
// server's inputSchema to it without compiling anything.
#pragma once

#include <string>

namespace dshpty::repl {

// {"json": {OP: [FIELD...]}, "mcp": {TOOL: [FIELD...]}}; a FIELD is {name, type, required,
// minimum?, maximum?, enum?, default?}.
std::string field_table_json();

}  // namespace dshpty::repl
