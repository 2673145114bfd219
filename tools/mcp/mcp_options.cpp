#include "mcp_options.hpp"

#ifndef DSHPTY_VERSION
#define DSHPTY_VERSION "unknown"
#endif

namespace dshpty::mcp {

Result<Options> parse_options(const std::vector<std::string_view>& args) {
  Options options;
  options.max_result_bytes = render::kMcpDefaultMaxResultBytes;  // --max-result-bytes overrides
  tool::ArgReader reader(args);
  while (reader.next()) {
    const std::string_view arg = reader.name();
    Status status;
    if (arg == "--help" || arg == "-h") {
      status = reader.flag(options.help);
    } else if (arg == "--version") {
      status = reader.flag(options.version);
    } else if (auto session = tool::parse_session_option(reader, options)) {
      status = std::move(*session);
    } else {
      return make_error(Code::INVALID_ARGUMENT, "unknown option \"" + std::string(reader.word()) + "\"");
    }
    if (!status) return status.error();
  }
  if (auto checked = tool::check_session_options(options); !checked) return checked.error();
  return options;
}

std::string version_text() { return "dshpty-mcp " DSHPTY_VERSION "\n"; }

std::string usage_text() {
  return R"HELP(Usage: dshpty-mcp [OPTIONS]

An MCP server (Model Context Protocol, stdio transport) giving an agent persistent
terminal sessions of a dshpty service (local shell backend, and the remote ones of
--remote): JSON-RPC 2.0, one message per line on stdin/stdout; nothing else is ever
written to stdout. One process, one libev loop, one owner (the client). EOF on stdin
closes every session (its whole process tree gone; those opened with `linger` are
left running) and exits 0. See docs/mcp.md.

Options:
  --help                  print this help and exit
  --version               print the version and exit
)HELP" + std::string(tool::session_options_usage()) +
         R"HELP(
Tools: terminal_open, terminal_send, terminal_read, terminal_signal, terminal_close,
terminal_list, terminal_resize, terminal_attach (tools/list has their schemas and
descriptions). Sessions opened with `linger` outlive EOF, SIGTERM and SIGHUP; a
restarted server takes them over with terminal_attach (docs/outlive.md).

Add it to an agent:
  Claude Code:  claude mcp add dshpty -- /path/to/dshpty-mcp
  Codex:        ~/.codex/config.toml:  [mcp_servers.dshpty]  command = "/path/to/dshpty-mcp"
  Gemini CLI:   ~/.gemini/settings.json:
                {"mcpServers": {"dshpty": {"command": "/path/to/dshpty-mcp"}}}

Environment:
  DSHPTY_SUPERVISOR       the dshpty-supervisor helper; otherwise the one next to
                          this program in a build tree, else the installed one

Exit status: 0 after EOF; 1 when tearing down failed; 2 for bad options.
)HELP";
}

}  // namespace dshpty::mcp
