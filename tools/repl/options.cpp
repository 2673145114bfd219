#include "options.hpp"

#include <charconv>
#include <cstdint>

#ifndef DSHPTY_VERSION
#define DSHPTY_VERSION "unknown"
#endif

namespace dshpty::repl {

namespace {
Error bad(std::string message) { return make_error(Code::INVALID_ARGUMENT, std::move(message)); }

std::optional<std::uint64_t> parse_number(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}
}  // namespace

Result<Options> parse_options(const std::vector<std::string_view>& args) {
  Options options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::optional<std::string_view> inline_value;
    if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string_view::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto flag = [&](bool& field) -> Status {
      if (inline_value) return bad(std::string(arg) + " takes no value");
      field = true;
      return {};
    };
    auto value = [&]() -> Result<std::string_view> {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) return bad(std::string(arg) + " needs a value");
      return args[++i];
    };
    auto number = [&](std::uint64_t min, std::uint64_t max) -> Result<std::uint64_t> {
      auto text = value();
      if (!text) return text.error();
      const auto n = parse_number(*text);
      if (!n || *n < min || *n > max)
        return bad(std::string(arg) + " must be a number from " + std::to_string(min) + " to " + std::to_string(max) +
                   ", not \"" + std::string(*text) + "\"");
      return *n;
    };

    Status status;
    if (arg == "--help" || arg == "-h") {
      status = flag(options.help);
    } else if (arg == "--version") {
      status = flag(options.version);
    } else if (arg == "--json") {
      status = flag(options.json);
    } else if (arg == "--open-main") {
      status = flag(options.open_main);
    } else if (arg == "--shell" || arg == "--cwd") {
      auto text = value();
      if (!text) return text.error();
      if (text->empty()) return bad(std::string(arg) + " needs a non-empty path");
      (arg == "--shell" ? options.shell : options.cwd) = std::string(*text);
    } else if (arg == "--rows" || arg == "--cols") {
      auto n = number(1, 4096);
      if (!n) return n.error();
      (arg == "--rows" ? options.rows : options.cols) = static_cast<unsigned>(*n);
    } else if (arg == "--idle-ms" || arg == "--timeout-ms") {
      auto n = number(1, 24ull * 3600 * 1000);
      if (!n) return n.error();
      (arg == "--idle-ms" ? options.idle : options.timeout) = std::chrono::milliseconds(*n);
    } else if (arg == "--max-result-bytes") {
      auto n = number(render::kMinMaxResultBytes, std::uint64_t{1} << 32);
      if (!n) return n.error();
      options.max_result_bytes = static_cast<std::size_t>(*n);
    } else {
      return bad("unknown option \"" + std::string(args[i]) + "\"");
    }
    if (!status) return status.error();
  }
  if (options.json && options.open_main) return bad("--open-main is for text mode, not --json");
  return options;
}

std::vector<std::string> shell_argv(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base == "bash") return {path, "--noprofile", "--norc", "-i"};
  return {path, "-i"};
}

std::string version_text() { return "dshpty-repl " DSHPTY_VERSION "\n"; }

std::string usage_text() {
  return R"HELP(Usage: dshpty-repl [OPTIONS]

Drive persistent PTY sessions of a dshpty service (local shell backend) from a
terminal, or from another program with --json. One process, one libev loop.

Options:
  --help                  print this help and exit
  --version               print the version and exit
  --json                  speak JSON Lines on stdin/stdout instead of text
  --open-main             (text mode) open a shell session named "main" at start-up
  --shell PATH            the shell to run (default /bin/bash --noprofile --norc -i;
                          a non-bash shell is run as PATH -i)
  --cwd DIR               the sessions' default working directory (default: ours)
  --rows N, --cols N      the terminal size of new sessions (default 40 x 160)
  --idle-ms MS            silence that ends a send as inferred_idle (default 3000)
  --timeout-ms MS         a send's default deadline (default 30000)
  --max-result-bytes N    cut output longer than N bytes (default 262144, at least 64)

Text mode (a terminal: line editing, history, Tab completes commands and sessions):
  open TYPE [NAME] [--cwd DIR]
      start a session; prints "started terminal session pty-1 (main) [type: shell]"
      then its start-up output, or "(no startup output)"
  send [ID] [--no-submit] [--timeout MS] [--idle MS] [--] TEXT...
      type TEXT (verbatim; Enter unless --no-submit) and wait until the shell reads
      input again, goes idle, times out or exits; prints the output or
      "(no new output)", then "[wait: REASON]" (stdin_read, inferred_idle, timeout,
      session_exit) and "[session: running]" or "[session: exited code=X signal=Y]"
  read [ID] [OFFSET [COUNT]]
      page retained output, OFFSET lines back from the newest, COUNT lines (500);
      prints the page or "(no retained output)", then "[lines: B-E of T]"
      (numbered from 1, oldest retained first)
  signal [ID] SIGNAME
      SIGINT, SIGTERM, SIGKILL, SIGTSTP or SIGHUP to the foreground process group;
      prints "delivered SIGINT to foreground process group PGID"
  close [ID]
      close a session once its whole process tree is gone; prints "closed terminal
      session pty-1" or "terminal session pty-1 was already closing"
  list
      one line per session: "pty-1 (main) [shell] running pid=9" or
      "... exited code=2 signal=null pid=9"; "(no terminal sessions)" when none
  use [ID]
      make ID the current session, so the commands above may leave ID out
  help, quit
      list the commands; close every session and exit 0 (also Ctrl-D)
  ID is a session id (pty-1) or the name it was opened with. Errors print
  "error: CODE: message" and never end the REPL. Ctrl-C cancels a live send (a real
  SIGINT to the session's foreground process group) or a pending open; at the
  prompt it does nothing. Output over --max-result-bytes ends "[output truncated]".
  When stdin is not a terminal, commands are read one per line, without prompts.

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
  status is {"kind":"running"} or {"kind":"exited","exitCode":N|null,"signal":S|null}.
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
