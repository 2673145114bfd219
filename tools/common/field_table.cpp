#include "field_table.hpp"

#include <array>
#include <cstddef>

#include "engine.hpp"

namespace dshpty::tool {

namespace {

using T = FieldType;

constexpr std::string_view kRcChoices[] = {"none", "user"};
constexpr std::string_view kTerminalChoices[] = {"dumb", "xterm"};
constexpr std::string_view kSandboxChoices[] = {"none", "workspace-write", "read-only"};
constexpr std::string_view kNetworkChoices[] = {"on", "off"};
constexpr std::string_view kSignalChoices[] = {"SIGINT", "SIGTERM", "SIGKILL", "SIGTSTP", "SIGHUP"};

constexpr std::int64_t kWaitMax = engine::kMaxWaitMs;

// A session's limits (docs/security.md, "Resource limits"): the backend checks the ranges
// and the operator's ceilings, naming "limits.KIND".
constexpr Field kLimitFields[] = {
    {.name = "pids", .type = T::integer, .min = 1, .doc = "Processes and threads of the session's tree."},
    {.name = "memory", .type = T::integer, .min = 1, .doc = "Bytes of memory, the tree's total."},
    {.name = "cpu", .type = T::number, .doc = "CPUs' worth of time (0.5: half of one CPU's)."}};

// The fields of opening a session that both protocols spell alike (`type`'s default differs:
// required on the JSON face, "shell" on MCP).
constexpr Field kOpenFields[] = {
    {.name = "name", .doc = "A name to refer to the session by, unique among your sessions, e.g. \"main\"."},
    {.name = "cwd", .doc = "The directory the shell starts in."},
    {.name = "shell",
     .default_value = "bash",
     .doc = "The shell: \"bash\" (the default), \"zsh\", \"fish\", or an absolute path to one of them."},
    {.name = "rc",
     .choices = kRcChoices,
     .default_value = "none",
     .doc = "\"user\" to read the user's startup files (~/.bashrc, ~/.zshrc, config.fish: PATH from nvm, "
            "pyenv, conda); \"none\" (the default) reads none."},
    {.name = "history",
     .default_value = "private",
     .doc = "Shell history: \"private\" (the default: in memory only), \"off\", or an absolute file path."},
    {.name = "terminal",
     .choices = kTerminalChoices,
     .default_value = "dumb",
     .doc = "\"xterm\" for full-screen programs (vim, less, top), where the backend supports it; \"dumb\" "
            "otherwise."},
    {.name = "sandbox",
     .choices = kSandboxChoices,
     .doc = "Confinement (bubblewrap): \"read-only\" (nothing writable but a private /tmp), "
            "\"workspace-write\" (the cwd writable; .git's config and hooks stay read-only), \"none\" (the "
            "host as it is)."},
    {.name = "network",
     .choices = kNetworkChoices,
     .default_value = "off",
     .doc = "A confined session's network: \"off\" (the default: loopback only) or \"on\"."},
    {.name = "linger",
     .type = T::integer,
     .min = 0,
     .max = kMaxLinger,
     .default_value = "0",
     .doc = "Seconds the session outlives this server (a restart, a crash): its processes keep running "
            "and its output is kept; a restarted server takes it over with terminal_attach. For a remote "
            "type it is also how long a cut link may take to come back: the session is reconnecting "
            "meanwhile, with its processes and output kept. 0 (the default): the session ends with the "
            "server (or its link)."},
    {.name = "limits",
     .type = T::object,
     .doc = "Per-session limits, e.g. {\"pids\": 256, \"memory\": 1073741824, \"cpu\": 1}: processes and "
            "threads, bytes of memory (an OOM kill stays inside the session), CPUs' worth of time. The operator's are "
            "the defaults; you may ask for less, never more. A session that reaches one says so: "
            "\"[limit: pids]\" (a fork refused) or \"[limit: memory (OOM kill of PID COMMAND)]\".",
     .members = kLimitFields},
    {.name = "record",
     .type = T::boolean,
     .doc = "false: this session is not recorded. Where the operator set a recording directory, every session "
            "is recorded there as an asciicast file (what the terminal showed, what was typed; input typed while "
            "a program hid it, a password, is never written); true where none is set is an error."}};

// `head` then `tail`, as one row.
template <std::size_t N, std::size_t M>
constexpr std::array<Field, N + M> join(const Field (&head)[N], const Field (&tail)[M]) {
  std::array<Field, N + M> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = head[i];
  for (std::size_t i = 0; i < M; ++i) out[N + i] = tail[i];
  return out;
}

constexpr std::string_view kSessionDoc = "The session: its id (pty-1) or the name it was opened with.";
constexpr std::string_view kTextDoc =
    "What to type, verbatim (a command line, or the answer a program waits for). Leave it out (or empty), with no "
    "keys, to check in: nothing is typed; it returns at once when the shell is back at its prompt (with the exit "
    "status of what finished), else waits for more output of the running command.";
constexpr std::string_view kKeysDoc =
    "Named keys to press after the text, in the program's current modes (tmux's names): Enter Escape Tab BTab BSpace "
    "Space Up Down Left Right Home End PageUp PageDown Insert Delete F1..F12, with C- M- S- prefixes (C-c, M-x, "
    "S-Tab); a single character stands for itself (\"q\", \":\"). E.g. [\"Down\", \"Down\", \"Enter\"] in a menu, "
    "[\"Escape\"] in vim. The screen returned is the one the program drew after the keys (the call waits while it "
    "sits out a short timeout, like vim's escape delay). An unknown name fails the call; nothing is typed.";
constexpr std::string_view kSubmitDoc =
    "Press Enter after the text and keys (default true when there is text, false for keys alone).";
constexpr std::string_view kTimeoutDoc =
    "How long to wait at most, in milliseconds (default 30000). Keep it under a minute; a longer job comes back as "
    "timeout and you send again.";
constexpr std::string_view kIdleDoc =
    "Silence, in milliseconds, after which the send comes back as inferred_idle (default 3000).";
constexpr std::string_view kOffsetDoc = "How many lines back from the newest the page ends (default 0).";
constexpr std::string_view kCountDoc = "How many lines (default 500).";
constexpr std::string_view kScreenDoc =
    "Return the terminal's screen as a person would see it now instead of scrollback lines.";
constexpr std::string_view kSignalDoc = "SIGINT is Ctrl-C, SIGTSTP Ctrl-Z.";
constexpr Field kUntilFields[] = {
    {.name = "output", .doc = "An ECMAScript regex a new line of output matches."},
    {.name = "port", .type = T::integer, .min = 1, .max = 65535,
     .doc = "A TCP port a process of the session listens on (any address)."}};
constexpr std::string_view kUntilDoc =
    "Also come back as soon as this holds (waitReason matched), e.g. {\"port\": 5173} or {\"output\": "
    "\"Compiled successfully\"}: \"output\" an ECMAScript regex matched against each new line of output (the echo "
    "of the text excluded), \"port\" a TCP port a process of the session listens on. A command that ends first "
    "comes back as it would without it; quiet output alone never ends such a send.";

// ---- JSON Lines (docs/tool-protocol.md) ----
constexpr Field kJsonType[] = {{.name = "type", .required = true, .doc = "The backend type, e.g. \"shell\"."}};
constexpr auto kJsonOpen = join(kJsonType, kOpenFields);
constexpr Field kJsonSend[] = {
    {.name = "sessionId", .required = true, .doc = "The session's id."},
    {.name = "text", .doc = kTextDoc},
    {.name = "keys", .type = T::strings, .doc = kKeysDoc},
    {.name = "submit", .type = T::boolean, .doc = kSubmitDoc},
    {.name = "timeoutMs", .type = T::integer, .min = 1, .max = kWaitMax, .default_value = "30000", .doc = kTimeoutDoc},
    {.name = "idleMs", .type = T::integer, .min = 1, .max = kWaitMax, .default_value = "3000", .doc = kIdleDoc},
    {.name = "until", .type = T::object, .doc = kUntilDoc, .members = kUntilFields},
    {.name = "background",
     .type = T::boolean,
     .default_value = "false",
     .doc = "Answer at once with {job, sessionId} (job: this request's id) while the send runs on as a job: it "
            "never ends by quiet, has no deadline unless timeoutMs is set, and its result comes through "
            "{\"op\": \"output\", \"sendId\": job} once it ended."}};
constexpr Field kJsonSendId[] = {{.name = "sendId", .type = T::id, .required = true, .doc = "The send's request id."}};
constexpr Field kJsonRead[] = {{.name = "sessionId", .required = true, .doc = "The session's id."},
                               {.name = "offset", .type = T::integer, .default_value = "0", .doc = kOffsetDoc},
                               {.name = "count", .type = T::integer, .default_value = "500", .doc = kCountDoc},
                               {.name = "screen", .type = T::boolean, .default_value = "false", .doc = kScreenDoc}};
constexpr Field kJsonResize[] = {
    {.name = "sessionId", .required = true, .doc = "The session's id."},
    {.name = "rows", .type = T::integer, .required = true, .min = 1, .max = kMaxTerminalSide, .doc = "Rows."},
    {.name = "cols", .type = T::integer, .required = true, .min = 1, .max = kMaxTerminalSide, .doc = "Columns."}};
constexpr Field kJsonSignal[] = {{.name = "sessionId", .required = true, .doc = "The session's id."},
                                 {.name = "signal", .required = true, .choices = kSignalChoices, .doc = kSignalDoc}};
constexpr Field kJsonSession[] = {{.name = "sessionId", .required = true, .doc = "The session's id."}};
constexpr Field kJsonAttach[] = {{.name = "name", .doc = "The name the session was opened with."}};

constexpr OpFields kJsonOps[] = {
    {"open", kJsonOpen},     {"send", kJsonSend},     {"cancel", kJsonSendId}, {"output", kJsonSendId},
    {"read", kJsonRead},     {"resize", kJsonResize}, {"signal", kJsonSignal}, {"close", kJsonSession},
    {"attach", kJsonAttach}, {"list", {}},            {"activity", {}},        {"disposeOwner", {}},
    {"shutdown", {}},        {"hello", {}},
};

// ---- MCP (docs/mcp.md): the descriptions are what the model reads ----
constexpr Field kMcpType[] = {{.name = "type", .default_value = "shell",
                               .doc = "The backend type; \"shell\" (the default) is a local interactive shell "
                                      "(bash, zsh or fish)."}};
constexpr auto kMcpOpen = join(kMcpType, kOpenFields);
constexpr Field kMcpSend[] = {
    {.name = "session", .required = true, .doc = kSessionDoc},
    {.name = "text", .doc = kTextDoc},
    {.name = "keys", .type = T::strings, .doc = kKeysDoc},
    {.name = "submit", .type = T::boolean, .doc = kSubmitDoc},
    {.name = "timeout_ms", .type = T::integer, .min = 1, .max = kWaitMax, .default_value = "30000", .doc = kTimeoutDoc},
    {.name = "idle_ms", .type = T::integer, .min = 1, .max = kWaitMax, .default_value = "3000", .doc = kIdleDoc},
    {.name = "until", .type = T::object, .doc = kUntilDoc, .members = kUntilFields}};
constexpr Field kMcpRead[] = {{.name = "session", .required = true, .doc = kSessionDoc},
                              {.name = "offset", .type = T::integer, .min = 0, .default_value = "0", .doc = kOffsetDoc},
                              {.name = "count", .type = T::integer, .min = 1, .default_value = "500", .doc = kCountDoc},
                              {.name = "screen", .type = T::boolean, .default_value = "false", .doc = kScreenDoc}};
constexpr Field kMcpSignal[] = {{.name = "session", .required = true, .doc = kSessionDoc},
                                {.name = "signal", .required = true, .choices = kSignalChoices, .doc = kSignalDoc}};
constexpr Field kMcpResize[] = {
    {.name = "session", .required = true, .doc = kSessionDoc},
    {.name = "rows", .type = T::integer, .required = true, .min = 1, .max = kMaxTerminalSide, .doc = "Rows."},
    {.name = "cols", .type = T::integer, .required = true, .min = 1, .max = kMaxTerminalSide, .doc = "Columns."}};
constexpr Field kMcpSession[] = {{.name = "session", .required = true, .doc = kSessionDoc}};
constexpr Field kMcpAttach[] = {{.name = "name", .doc = "The name the session was opened with."}};

constexpr OpFields kMcpTools[] = {
    {"terminal_open", kMcpOpen},     {"terminal_send", kMcpSend},     {"terminal_read", kMcpRead},
    {"terminal_signal", kMcpSignal}, {"terminal_close", kMcpSession}, {"terminal_list", {}},
    {"terminal_resize", kMcpResize}, {"terminal_attach", kMcpAttach},
};

}  // namespace

std::string_view field_type_name(FieldType type) {
  switch (type) {
    case FieldType::string: return "string";
    case FieldType::integer: return "integer";
    case FieldType::boolean: return "boolean";
    case FieldType::strings: return "array";
    case FieldType::id: return "id";
    case FieldType::number: return "number";
    case FieldType::object: return "object";
  }
  return "string";
}

std::span<const OpFields> json_ops() { return kJsonOps; }
std::span<const OpFields> mcp_tools() { return kMcpTools; }

const OpFields* find_op(std::span<const OpFields> table, std::string_view op) {
  for (const auto& row : table)
    if (row.op == op) return &row;
  return nullptr;
}

}  // namespace dshpty::tool
