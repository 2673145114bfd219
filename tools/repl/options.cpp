#include "options.hpp"

#include "text_command.hpp"

#ifndef DSHPTY_VERSION
#define DSHPTY_VERSION "unknown"
#endif

namespace dshpty::repl {

namespace {
Error bad(std::string message) { return make_error(Code::INVALID_ARGUMENT, std::move(message)); }
}  // namespace

Result<Options> parse_options(const std::vector<std::string_view>& args) {
  Options options;
  tool::ArgReader reader(args);
  while (reader.next()) {
    const std::string_view arg = reader.name();
    Status status;
    if (arg == "--help" || arg == "-h") {
      status = reader.flag(options.help);
    } else if (arg == "--version") {
      status = reader.flag(options.version);
    } else if (arg == "--json") {
      status = reader.flag(options.json);
    } else if (arg == "--print-fields") {
      status = reader.flag(options.print_fields);
    } else if (arg == "--open-main") {
      status = reader.flag(options.open_main);
    } else if (auto session = tool::parse_session_option(reader, options)) {
      status = std::move(*session);
    } else {
      return bad("unknown option \"" + std::string(reader.word()) + "\"");
    }
    if (!status) return status.error();
  }
  if (auto checked = tool::check_session_options(options); !checked) return checked.error();
  if (options.json && options.open_main) return bad("--open-main is for text mode, not --json");
  return options;
}

std::string version_text() { return "dshpty-repl " DSHPTY_VERSION "\n"; }

std::string usage_text() {
  return R"HELP(Usage: dshpty-repl [OPTIONS]
       dshpty-repl watch [--state-dir DIR] [NAME|ID] | watch --list   (docs/watch.md)

Drive persistent PTY sessions of a dshpty service (local shell backend, and the
remote ones of --remote) from a terminal, or from another program with --json. One
process, one libev loop.

Options:
  --help                  print this help and exit
  --version               print the version and exit
  --json                  speak JSON Lines on stdin/stdout instead of text
  --open-main             (text mode) open a shell session named "main" at start-up
)HELP" + std::string(tool::session_options_usage()) + R"HELP(
Text mode (a terminal: line editing, history, Tab completes commands and sessions):
)HELP" + text_commands_help() + R"HELP(  Results print the output or "(no new output)", then "[wait: REASON]" (stdin_read,
  inferred_idle, timeout, session_exit), "[exit: N]" and "[cwd: DIR]" at the shell's
  prompt, and "[session: running]" (or exited, lost, reconnecting). Errors print
  "error: CODE: message" and never end the REPL. Output over --max-result-bytes keeps
  its head and tail around "[output truncated: N lines, M bytes left out]". When stdin
  is not a terminal, commands are read one per line, without prompts.

JSON Lines (--json): one request object per line, one response per line. Every
request has an "id" (any JSON value, echoed); "owner" (a label, default "default")
selects the acting owner, one per label; after disposeOwner the label names a new
owner. Requests overlap: responses may come out of order.
  {"id":1,"op":"open","type":"shell","name":"main","cwd":"/tmp"}
      -> {sessionId, name?, type, pid?, motd, status, truncated}
  {"id":2,"op":"send","sessionId":"pty-1","text":"ls","submit":true,
   "timeoutMs":30000,"idleMs":3000}
      -> {viewport, waitReason, sessionStatus, truncated}
  {"id":3,"op":"cancel","sendId":2}      -> {cancelled}   (the id of a live send)
  {"id":4,"op":"output","sendId":2}      -> {delta, truncated}  (consuming)
  {"id":5,"op":"read","sessionId":"pty-1","offset":0,"count":500}
      -> {text, totalLines, lineBegin, lineEnd, truncated}
  {"id":6,"op":"signal","sessionId":"pty-1","signal":"SIGINT"}
      -> {delivered: true, targetPgid}
  {"id":7,"op":"close","sessionId":"pty-1"}  -> {outcome: "closed"|"already-closing"}
  {"id":8,"op":"list"}       -> {sessions: [{sessionId, name?, type, pid?, status}]}
  {"id":9,"op":"activity"}   -> {active}
  {"id":10,"op":"disposeOwner","owner":"agent-2"}  -> {}
  {"id":11,"op":"shutdown"}  -> {} once every session is gone; then exit 0
  {"id":12,"op":"hello"}     -> {name: "dshpty-repl", version, protocol: 1}
  status is {"kind":"running"}, {"kind":"exited","exitCode":N|null,"signal":S|null}
  or {"kind":"lost","reason":"ssh exited 255: ..."} (a remote link ended), or
  {"kind":"reconnecting","reason":"ssh killed by SIGKILL"} (a lingering remote
  session's link is being restored; it runs again after).
  Success: {"id":..,"ok":true,"result":{..}}. Failure: {"id":..,"ok":false,"error":
  {"code":"NO_SESSION","message":"unknown PTY session ID"}} ("errors":[..] for
  aggregates). A bad line (not JSON, unknown op, missing or mistyped field, longer
  than 1 MiB) gets INVALID_ARGUMENT (id null when unreadable); serving goes on.
  EOF on stdin is shutdown. Text fields over --max-result-bytes are cut at a UTF-8
  boundary and flagged truncated.

Environment:
  DSHPTY_SUPERVISOR       the dshpty-supervisor helper; otherwise the one next to
                          this program in a build tree, else the installed one

Exit status: 0 after quit, Ctrl-D, shutdown or EOF; 1 when tearing down failed;
2 for bad options.
)HELP";
}

}  // namespace dshpty::repl
