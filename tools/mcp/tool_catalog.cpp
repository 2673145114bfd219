#include "tool_catalog.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "dshpty/linger.hpp"
#include "field_table.hpp"
#include "json_args.hpp"

namespace dshpty::mcp {

namespace {

Error invalid(std::string message) { return make_error(Code::INVALID_ARGUMENT, std::move(message)); }

const std::string kLingerRange = "must be whole seconds 0.." + std::to_string(kMaxLingerSeconds);

// A JSON Schema property of one row of the table.
Json property(const tool::Field& field) {
  Json out{{"type", std::string(tool::field_type_name(field.type))}};
  if (field.type == tool::FieldType::strings) out["items"] = Json{{"type", "string"}};
  if (!field.choices.empty()) {
    out["enum"] = Json::array();
    for (std::string_view choice : field.choices) out["enum"].push_back(std::string(choice));
  }
  if (field.type == tool::FieldType::integer) {
    out["minimum"] = field.min;
    if (field.max != tool::kUnbounded) out["maximum"] = field.max;
  }
  if (field.type == tool::FieldType::object) {
    out["properties"] = Json::object();
    for (const tool::Field& member : field.members) out["properties"][std::string(member.name)] = property(member);
    out["additionalProperties"] = false;
  }
  out["description"] = std::string(field.doc);
  return out;
}

// The tool's inputSchema, made from its row of the table (tool::mcp_tools()).
Json input_schema(std::string_view name) {
  const tool::OpFields* row = tool::find_op(tool::mcp_tools(), name);
  Json properties = Json::object();
  Json required = Json::array();
  if (row)
    for (const tool::Field& field : row->fields) {
      properties[std::string(field.name)] = property(field);
      if (field.required) required.push_back(std::string(field.name));
    }
  Json schema{{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = std::move(required);
  schema["additionalProperties"] = false;
  return schema;
}

Json tool(const char* name, const char* title, const char* description, bool read_only, Json schema = nullptr) {
  return Json{{"name", name},
              {"title", title},
              {"description", description},
              {"inputSchema", schema.is_null() ? input_schema(name) : std::move(schema)},
              {"annotations", {{"readOnlyHint", read_only}, {"openWorldHint", false}}}};
}

Json open_tool(const std::vector<std::string>& backend_types, const engine::Settings::Policy& policy) {
  Json schema = input_schema("terminal_open");
  Json& properties = schema["properties"];
  // What the table cannot know: the remote types this server has, and what the operator allows.
  std::string remotes;
  for (const auto& type : backend_types)
    if (type != "shell") remotes += (remotes.empty() ? "\"" : ", \"") + type + "\"";
  if (!remotes.empty())
    properties["type"]["description"] =
        properties["type"]["description"].get<std::string>() + " Also " + remotes +
        ": a shell on another machine, the same session over a link; if the link ends, the "
        "session's status is \"lost: REASON\" (close it and open another); one opened with linger is "
        "\"reconnecting: REASON\" while the link is restored, then running again.";
  properties["sandbox"]["enum"] = policy.sandbox_allowed;
  properties["sandbox"]["description"] = properties["sandbox"]["description"].get<std::string>() +
                                         " The operator allows only the values listed; the default is \"" +
                                         policy.sandbox_default + "\".";
  if (policy.network_off) {
    properties["network"]["enum"] = Json::array({"off"});
    properties["network"]["description"] = "A confined session's network: the operator fixed it \"off\" (loopback only).";
  }
  return tool("terminal_open", "Open a terminal session",
              "Start a persistent terminal session (an interactive bash, zsh or fish on a real PTY) and return its "
              "id, e.g. \"started terminal session pty-1 (main) [type: shell]\", then its start-up output. The session "
              "keeps its state between calls (working directory, environment variables, shell functions, background "
              "jobs, a running program) until terminal_close, so open one and reuse it rather than opening one per "
              "command.",
              false, std::move(schema));
}

Json send_tool() {
  return tool(
      "terminal_send", "Type into a terminal session and wait",
      "Type text into a session (Enter added unless submit is false) and wait until it is ready for input again. The "
      "result is two text items: the new output, then the status lines, \"[wait: REASON]\": stdin_read (the shell or a program is reading the terminal "
      "again), inferred_idle (no output for idle_ms), timeout (timeout_ms passed), session_exit (the shell exited) or "
      "matched (the until condition held; the status line names the line, or the port and its pid); "
      "then \"[exit: N]\" and \"[cwd: DIR]\" when the command finished back at the shell's prompt, and "
      "\"[session: running]\", \"[session: exited ...]\", \"[session: lost: REASON]\" (a remote session's link "
      "ended) or \"[session: reconnecting: REASON]\" (a lingering remote session's link is being restored). An inferred_idle or timeout result does not prove the "
      "foreground command exited: send again with no text to check in (you get everything printed since your last "
      "result, and how the command ended), or interrupt it with terminal_signal. Every result starts where the last "
      "one ended: output that came between your calls is in the next result, never lost. "
      "\", input hidden\" after stdin_read means a password prompt: ask the user, do not guess. Status lines are only "
      "ever in the second item: a line of output that looks like one is shown with a backslash in front "
      "(\"\\[exit: 0]\"), the program's text, not a status. Long output keeps "
      "its start and its end with a line \"[output truncated: N lines, M bytes left out]\" between them; page "
      "through the rest with terminal_read. One send at a time "
      "per session; state persists across sends (cd, export and background jobs stay). When the send ends inside a "
      "full-screen program (vim, less, a menu; open the session with terminal \"xterm\" for those), the result is "
      "the program's screen instead of the output: \"[screen ROWSxCOLS cursor R,C alternate]\" then its rows, taken "
      "once the program has drawn what your keys did (after Escape, vim's escape wait included); drive it with keys.",
      false);
}

Json read_tool() {
  return tool("terminal_read", "Read a terminal session's output",
              "Read a session's retained output (its scrollback) without typing anything: count lines ending offset "
              "lines back from the newest. The result ends with \"[lines: B-E of T]\" (numbered from 1, oldest "
              "retained first), so you can page back to see what scrolled out of a send's result. With screen true: "
              "the screen now, \"[screen ROWSxCOLS cursor R,C]\" (1-based; \"hidden\", \"alternate\" and the "
              "title when set) then its rows, for a full-screen program.",
              true);
}

Json signal_tool() {
  return tool("terminal_signal", "Signal a terminal session's running command",
              "Deliver a signal to the session's foreground process group (the running command, not the session), "
              "e.g. SIGINT to stop a command that hangs. The session stays open; send again to see its output.",
              false);
}

Json resize_tool() {
  return tool("terminal_resize", "Resize a terminal session",
              "Set the terminal's window size; the running program is told (SIGWINCH) and redraws for it.",
              false);
}

Json close_tool() {
  return tool("terminal_close", "Close a terminal session",
              "Close a session: its whole process tree (background jobs included) is ended before this returns, "
              "and its id is no longer valid.",
              false);
}

Json attach_tool() {
  return tool("terminal_attach", "Take over lingering terminal sessions",
              "Take over sessions opened with linger that outlived a previous server: they come back with their "
              "processes and the output they printed meanwhile (terminal_read shows it). Without a name, every "
              "lingering session nobody holds; a session whose linger ran out is reported with how it ended.",
              false);
}

Json list_tool() {
  return tool("terminal_list", "List terminal sessions",
              "List your terminal sessions, one per line: \"pty-1 (main) [shell] running pid=9\", or \"exited "
              "code=N signal=S\" for one whose shell ended, or \"lost: REASON\" for a remote one whose link ended "
              "(close it to free it), or \"reconnecting: REASON\" while a lingering remote one's link is restored; then lingering sessions no server holds, with the time they have left "
              "(terminal_attach takes them over).",
              true);
}

// The one reader of JSON fields (json_args.hpp: null is absent, 5000.0 is 5000), and the
// check that refuses an argument outside the tool's: a misspelt one would be ignored
// silently otherwise.
class Arguments : public tool::JsonArgs<Json> {
 public:
  explicit Arguments(const Json& object) : JsonArgs(object, "argument"), object_(object) {}
  // INVALID_ARGUMENT for an argument outside the tool's row of the table.
  void only(std::string_view tool_name) {
    if (failed()) return;
    std::set<std::string_view> names;
    if (const tool::OpFields* row = tool::find_op(tool::mcp_tools(), tool_name))
      for (const tool::Field& field : row->fields) names.insert(field.name);
    for (const auto& [key, value] : object_.items())
      if (!names.count(key)) {
        fail(invalid("unknown argument \"" + key + "\""));
        return;
      }
  }
  std::optional<std::int64_t> integer(const char* name, std::int64_t minimum) {
    return integer_in(name, minimum, std::numeric_limits<std::int64_t>::max());
  }

 private:
  const Json& object_;
};

Result<ToolCall> parse_open(Arguments& a) {
  a.only("terminal_open");
  OpenCall call;
  call.request.type = a.string("type", false).value_or("shell");
  call.request.name = a.string("name", false);
  call.request.cwd = a.string("cwd", false);
  for (const auto& option : engine::kOpenOptions) {
    const std::string key(option.key);
    if (auto value = a.string(key.c_str(), false)) call.request.options[key] = *value;
  }
  if (auto linger = a.integer_in("linger", 0, kMaxLingerSeconds, kLingerRange))
    call.request.options["linger"] = std::to_string(*linger);
  if (auto limits = a.limits("limits")) call.request.limits = *limits;
  if (auto record = a.boolean("record")) call.request.options["record"] = *record ? "true" : "false";
  if (a.failed()) return a.error();
  return ToolCall(std::move(call));
}

Result<ToolCall> parse_send(Arguments& a) {
  a.only("terminal_send");
  SendCall call;
  call.session = a.string("session", true).value_or("");
  const auto text = a.string("text", false);
  call.request.text = text.value_or("");
  if (auto keys = a.strings("keys")) call.request.keys = std::move(*keys);
  // No text is a wait for more output (or keys alone): Enter would be a command line of
  // its own.
  call.request.submit = a.boolean("submit").value_or(!call.request.text.empty());
  // The engine checks the range (1..86400000, one rule on every face).
  constexpr auto kAny = std::numeric_limits<std::int64_t>::min();
  if (auto ms = a.integer("timeout_ms", kAny)) call.request.timeout = std::chrono::milliseconds(*ms);
  if (auto ms = a.integer("idle_ms", kAny)) call.request.idle = std::chrono::milliseconds(*ms);
  if (auto until = a.until("until")) call.request.until = std::move(*until);
  if (a.failed()) return a.error();
  return ToolCall(std::move(call));
}

Result<ToolCall> parse_read(Arguments& a) {
  a.only("terminal_read");
  ReadCall call;
  call.session = a.string("session", true).value_or("");
  call.screen = a.boolean("screen").value_or(false);
  if (auto offset = a.integer("offset", 0)) call.request.offset = *offset;
  if (auto count = a.integer("count", 1)) call.request.count = *count;
  if (a.failed()) return a.error();
  return ToolCall(std::move(call));
}

Result<ToolCall> parse_signal(Arguments& a) {
  a.only("terminal_signal");
  SignalCall call;
  call.session = a.string("session", true).value_or("");
  const auto name = a.string("signal", true);
  if (a.failed()) return a.error();
  const auto signal = dshpty::parse_signal(*name);
  if (!signal) return invalid("unknown signal \"" + *name + "\" (SIGINT SIGTERM SIGKILL SIGTSTP SIGHUP)");
  call.signal = *signal;
  return ToolCall(std::move(call));
}

Result<ToolCall> parse_resize(Arguments& a) {
  a.only("terminal_resize");
  ResizeCall call;
  call.session = a.string("session", true).value_or("");
  auto rows = a.integer("rows", 1);
  auto cols = a.integer("cols", 1);
  if (!a.failed() && (!rows || !cols)) return invalid(std::string("missing argument \"") + (rows ? "cols" : "rows") + "\"");
  if (a.failed()) return a.error();
  // The service checks the upper bound (1..4096) and says so; a size past `unsigned` stays past it.
  constexpr std::int64_t kWidest = std::numeric_limits<unsigned>::max();
  call.rows = static_cast<unsigned>(std::min(*rows, kWidest));
  call.cols = static_cast<unsigned>(std::min(*cols, kWidest));
  return ToolCall(std::move(call));
}

Result<ToolCall> parse_close(Arguments& a) {
  a.only("terminal_close");
  CloseCall call;
  call.session = a.string("session", true).value_or("");
  if (a.failed()) return a.error();
  return ToolCall(std::move(call));
}

}  // namespace

Json tool_list(const std::vector<std::string>& backend_types, const engine::Settings::Policy& policy) {
  return Json::array({open_tool(backend_types, policy), send_tool(), read_tool(), signal_tool(), close_tool(), list_tool(),
                      resize_tool(), attach_tool()});
}

std::optional<Result<ToolCall>> parse_tool_call(std::string_view name, const Json& arguments) {
  static const Json kNone = Json::object();
  if (!arguments.is_null() && !arguments.is_object()) return Result<ToolCall>(invalid("arguments must be an object"));
  Arguments a(arguments.is_null() ? kNone : arguments);
  if (name == "terminal_open") return parse_open(a);
  if (name == "terminal_send") return parse_send(a);
  if (name == "terminal_read") return parse_read(a);
  if (name == "terminal_signal") return parse_signal(a);
  if (name == "terminal_close") return parse_close(a);
  if (name == "terminal_resize") return parse_resize(a);
  if (name == "terminal_attach") {
    a.only("terminal_attach");
    AttachCall call;
    call.name = a.string("name", false);
    if (a.failed()) return Result<ToolCall>(a.error());
    return Result<ToolCall>(ToolCall(std::move(call)));
  }
  if (name == "terminal_list") {
    a.only("terminal_list");
    if (a.failed()) return Result<ToolCall>(a.error());
    return Result<ToolCall>(ToolCall(ListCall{}));
  }
  return std::nullopt;
}

}  // namespace dshpty::mcp
