#include "tool_catalog.hpp"

#include <algorithm>
#include <limits>
#include <vector>
#include <set>

namespace dshpty::mcp {

namespace {

Error invalid(std::string message) { return make_error(Code::INVALID_ARGUMENT, std::move(message)); }

constexpr const char* kSessionDescription =
    "The session: its id (pty-1) or the name it was opened with.";

Json string_property(const char* description) { return Json{{"type", "string"}, {"description", description}}; }

Json integer_property(const char* description, std::int64_t minimum) {
  return Json{{"type", "integer"}, {"minimum", minimum}, {"description", description}};
}

// A send's wait bound: integer milliseconds, 1..86400000 (a day) on every face.
Json wait_property(const char* description) {
  Json property = integer_property(description, 1);
  property["maximum"] = 86'400'000;
  return property;
}

Json object_schema(Json properties, Json required) {
  Json schema{{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = std::move(required);
  schema["additionalProperties"] = false;
  return schema;
}

Json tool(const char* name, const char* title, const char* description, Json schema, bool read_only) {
  return Json{{"name", name},
              {"title", title},
              {"description", description},
              {"inputSchema", std::move(schema)},
              {"annotations", {{"readOnlyHint", read_only}, {"openWorldHint", false}}}};
}

Json open_tool(const std::vector<std::string>& backend_types, const engine::Settings::Policy& policy) {
  std::string type_description =
      "The backend type; \"shell\" (the default) is a local interactive shell (bash, zsh or fish).";
  std::string remotes;
  for (const auto& type : backend_types)
    if (type != "shell") remotes += (remotes.empty() ? "\"" : ", \"") + type + "\"";
  if (!remotes.empty())
    type_description += " Also " + remotes +
                        ": a shell on another machine, the same session over a link; if the link ends, the "
                        "session's status is \"lost: REASON\" (close it and open another); one opened with linger is "
                        "\"reconnecting: REASON\" while the link is restored, then running again.";
  Json properties{{"type", {{"type", "string"}, {"description", std::move(type_description)}}},
                  {"name", string_property("A name to refer to the session by, unique among your sessions, e.g. \"main\".")},
                  {"cwd", string_property("The directory the shell starts in.")}};
  // The backend options every face takes (engine::kOpenOptions); the backend checks values.
  for (const auto& option : engine::kOpenOptions) {
    const std::string key(option.key);
    if (key == "terminal")
      properties[key] = Json{{"type", "string"},
                             {"enum", {"dumb", "xterm"}},
                             {"description", "\"xterm\" for full-screen programs (vim, less, top), where the backend "
                                             "supports it; \"dumb\" otherwise."}};
    else if (key == "shell")
      properties[key] = string_property("The shell: \"bash\" (the default), \"zsh\", \"fish\", or an absolute path to one of them.");
    else if (key == "rc")
      properties[key] = Json{{"type", "string"},
                             {"enum", {"none", "user"}},
                             {"description", "\"user\" to read the user's startup files (~/.bashrc, ~/.zshrc, config.fish: "
                                             "PATH from nvm, pyenv, conda); \"none\" (the default) reads none."}};
    else if (key == "history")
      properties[key] = string_property("Shell history: \"private\" (the default: in memory only), \"off\", or an absolute file path.");
    else if (key == "sandbox")
      properties[key] = Json{
          {"type", "string"},
          {"enum", policy.sandbox_allowed},
          {"description", "Confinement (bubblewrap): \"read-only\" (nothing writable but a private /tmp), "
                          "\"workspace-write\" (the cwd writable; .git's config and hooks stay read-only), "
                          "\"none\" (the host as it is). The operator allows only the values listed; the "
                          "default is \"" + policy.sandbox_default + "\"."}};
    else if (key == "network")
      properties[key] = Json{
          {"type", "string"},
          {"enum", policy.network_off ? Json::array({"off"}) : Json::array({"on", "off"})},
          {"description", policy.network_off
                              ? "A confined session's network: the operator fixed it \"off\" (loopback only)."
                              : "A confined session's network: \"off\" (the default: loopback only) or \"on\"."}};
    else
      properties[key] = string_property("A backend option, where the backend supports it.");
  }
  properties["linger"] = Json{
      {"type", "integer"},
      {"minimum", 0},
      {"maximum", 604800},
      {"description", "Seconds the session outlives this server (a restart, a crash): its processes keep running "
                      "and its output is kept; a restarted server takes it over with terminal_attach. For a remote "
                      "type it is also how long a cut link may take to come back: the session is reconnecting "
                      "meanwhile, with its processes and output kept. 0 (the default): the session ends with "
                      "the server (or its link)."}};
  return tool("terminal_open", "Open a terminal session",
              "Start a persistent terminal session (an interactive bash, zsh or fish on a real PTY) and return its "
              "id, e.g. \"started terminal session pty-1 (main) [type: shell]\", then its start-up output. The session "
              "keeps its state between calls (working directory, environment variables, shell functions, background "
              "jobs, a running program) until terminal_close, so open one and reuse it rather than opening one per "
              "command.",
              object_schema(std::move(properties), Json::array()), false);
}

Json send_tool() {
  Json properties{
      {"session", string_property(kSessionDescription)},
      {"text", string_property("What to type, verbatim (a command line, or the answer a program waits for). Leave it "
                               "out (or empty), with no keys, to check in: nothing is typed; it returns at once "
                               "when the shell is back at its prompt (with the exit status of what finished), "
                               "else waits for more output of the running command.")},
      {"keys", Json{{"type", "array"},
                    {"items", {{"type", "string"}}},
                    {"description", "Named keys to press after the text, in the program's current modes (tmux's "
                                    "names): Enter Escape Tab BTab BSpace Space Up Down Left Right Home End PageUp "
                                    "PageDown Insert Delete F1..F12, with C- M- S- prefixes (C-c, M-x, S-Tab); a single "
                                    "character stands for itself (\"q\", \":\"). E.g. [\"Down\", \"Down\", "
                                    "\"Enter\"] in a menu, [\"Escape\"] in vim. The screen returned is the one the "
                                    "program drew after the keys (the call waits while it sits out a short timeout, "
                                    "like vim's escape delay). An unknown name fails the call; nothing is typed."}}},
      {"submit", Json{{"type", "boolean"},
                      {"description", "Press Enter after the text and keys (default true when there is text, false "
                                      "for keys alone)."}}},
      {"timeout_ms", wait_property("How long to wait at most, in milliseconds (default 30000). Keep it under a "
                                   "minute; a longer job comes back as timeout and you send again.")},
      {"idle_ms", wait_property("Silence, in milliseconds, after which the send comes back as inferred_idle "
                                "(default 3000).")}};
  return tool(
      "terminal_send", "Type into a terminal session and wait",
      "Type text into a session (Enter added unless submit is false) and wait until it is ready for input again. The "
      "result is two text items: the new output, then the status lines, \"[wait: REASON]\": stdin_read (the shell or a program is reading the terminal "
      "again), inferred_idle (no output for idle_ms), timeout (timeout_ms passed) or session_exit (the shell exited); "
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
      object_schema(std::move(properties), Json::array({"session"})), false);
}

Json read_tool() {
  Json properties{{"session", string_property(kSessionDescription)},
                  {"offset", integer_property("How many lines back from the newest the page ends (default 0).", 0)},
                  {"count", integer_property("How many lines (default 500).", 1)},
                  {"screen", Json{{"type", "boolean"},
                                  {"description", "Return the terminal's screen as a person would see it now "
                                                  "instead of scrollback lines."}}}};
  return tool("terminal_read", "Read a terminal session's output",
              "Read a session's retained output (its scrollback) without typing anything: count lines ending offset "
              "lines back from the newest. The result ends with \"[lines: B-E of T]\" (numbered from 1, oldest "
              "retained first), so you can page back to see what scrolled out of a send's result. With screen true: "
              "the screen now, \"[screen ROWSxCOLS cursor R,C]\" (1-based; \"hidden\", \"alternate\" and the "
              "title when set) then its rows, for a full-screen program.",
              object_schema(std::move(properties), Json::array({"session"})), true);
}

Json signal_tool() {
  Json properties{{"session", string_property(kSessionDescription)},
                  {"signal", Json{{"type", "string"},
                                  {"enum", {"SIGINT", "SIGTERM", "SIGKILL", "SIGTSTP", "SIGHUP"}},
                                  {"description", "SIGINT is Ctrl-C, SIGTSTP Ctrl-Z."}}}};
  return tool("terminal_signal", "Signal a terminal session's running command",
              "Deliver a signal to the session's foreground process group (the running command, not the session), "
              "e.g. SIGINT to stop a command that hangs. The session stays open; send again to see its output.",
              object_schema(std::move(properties), Json::array({"session", "signal"})), false);
}

Json resize_tool() {
  Json properties{{"session", string_property(kSessionDescription)},
                  {"rows", Json{{"type", "integer"}, {"minimum", 1}, {"maximum", 4096}, {"description", "Rows."}}},
                  {"cols", Json{{"type", "integer"}, {"minimum", 1}, {"maximum", 4096}, {"description", "Columns."}}}};
  return tool("terminal_resize", "Resize a terminal session",
              "Set the terminal's window size; the running program is told (SIGWINCH) and redraws for it.",
              object_schema(std::move(properties), Json::array({"session", "rows", "cols"})), false);
}

Json close_tool() {
  return tool("terminal_close", "Close a terminal session",
              "Close a session: its whole process tree (background jobs included) is ended before this returns, "
              "and its id is no longer valid.",
              object_schema(Json{{"session", string_property(kSessionDescription)}}, Json::array({"session"})), false);
}

Json attach_tool() {
  return tool("terminal_attach", "Take over lingering terminal sessions",
              "Take over sessions opened with linger that outlived a previous server: they come back with their "
              "processes and the output they printed meanwhile (terminal_read shows it). Without a name, every "
              "lingering session nobody holds; a session whose linger ran out is reported with how it ended.",
              object_schema(Json{{"name", string_property("The name the session was opened with.")}}, Json::array()),
              false);
}

Json list_tool() {
  return tool("terminal_list", "List terminal sessions",
              "List your terminal sessions, one per line: \"pty-1 (main) [shell] running pid=9\", or \"exited "
              "code=N signal=S\" for one whose shell ended, or \"lost: REASON\" for a remote one whose link ended "
              "(close it to free it), or \"reconnecting: REASON\" while a lingering remote one's link is restored; then lingering sessions no server holds, with the time they have left "
              "(terminal_attach takes them over).",
              object_schema(Json::object(), Json::array()), true);
}

// Argument readers: nullopt + error when an argument is mistyped, or missing and required.
class Arguments {
 public:
  explicit Arguments(const Json& object) : object_(object) {}
  const Error& error() const { return error_; }
  bool failed() const { return static_cast<bool>(error_); }

  std::optional<std::string> string(const char* name, bool required) {
    const Json* field = find(name, required);
    if (!field) return std::nullopt;
    if (!field->is_string()) return fail(std::string("argument \"") + name + "\" must be a string");
    return field->get<std::string>();
  }
  std::optional<std::vector<std::string>> strings(const char* name) {
    const Json* field = find(name, false);
    if (!field) return std::nullopt;
    std::vector<std::string> out;
    if (field->is_array()) {
      for (const Json& item : *field) {
        if (!item.is_string()) break;
        out.push_back(item.get<std::string>());
      }
      if (out.size() == field->size()) return out;
    }
    return fail(std::string("argument \"") + name + "\" must be an array of strings");
  }
  std::optional<bool> boolean(const char* name) {
    const Json* field = find(name, false);
    if (!field) return std::nullopt;
    if (!field->is_boolean()) return fail(std::string("argument \"") + name + "\" must be true or false");
    return field->get<bool>();
  }
  std::optional<std::int64_t> integer(const char* name, std::int64_t minimum) {
    const Json* field = find(name, false);
    if (!field) return std::nullopt;
    std::optional<std::int64_t> value;
    if (field->is_number_unsigned()) {
      if (field->get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        value = static_cast<std::int64_t>(field->get<std::uint64_t>());
    } else if (field->is_number_integer()) {
      value = field->get<std::int64_t>();
    } else if (field->is_number_float()) {
      // Some clients send every number as a float: 5000.0 is still an integer.
      const double d = field->get<double>();
      if (d == static_cast<double>(static_cast<std::int64_t>(d))) value = static_cast<std::int64_t>(d);
    }
    if (!value) return fail(std::string("argument \"") + name + "\" must be an integer");
    if (*value < minimum)
      return fail(std::string("argument \"") + name + "\" must be at least " + std::to_string(minimum));
    return value;
  }
  // INVALID_ARGUMENT for any argument outside `known`: a misspelt one would be ignored
  // silently otherwise.
  void only(std::initializer_list<std::string_view> known) {
    if (error_) return;
    const std::set<std::string_view> names(known);
    for (const auto& [key, value] : object_.items())
      if (!names.count(key)) {
        fail("unknown argument \"" + key + "\"");
        return;
      }
  }

 private:
  const Json* find(const char* name, bool required) {
    if (error_) return nullptr;
    const auto it = object_.find(name);
    if (it == object_.end() || it->is_null()) {
      if (required) fail(std::string("missing argument \"") + name + "\"");
      return nullptr;
    }
    return &*it;
  }
  std::nullopt_t fail(std::string message) {
    if (!error_) error_ = invalid(std::move(message));
    return std::nullopt;
  }
  const Json& object_;
  Error error_;
};

Result<ToolCall> parse_open(Arguments& a) {
  a.only({"type", "name", "cwd", "shell", "rc", "history", "terminal", "sandbox", "network", "linger"});
  OpenCall call;
  call.request.type = a.string("type", false).value_or("shell");
  call.request.name = a.string("name", false);
  call.request.cwd = a.string("cwd", false);
  for (const auto& option : engine::kOpenOptions) {
    const std::string key(option.key);
    if (auto value = a.string(key.c_str(), false)) call.request.options[key] = *value;
  }
  if (auto linger = a.integer("linger", 0)) {
    if (*linger > 604800) return invalid("argument \"linger\" must be whole seconds 0..604800");
    call.request.options["linger"] = std::to_string(*linger);
  }
  if (a.failed()) return a.error();
  return ToolCall(std::move(call));
}

Result<ToolCall> parse_send(Arguments& a) {
  a.only({"session", "text", "keys", "submit", "timeout_ms", "idle_ms"});
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
  if (a.failed()) return a.error();
  return ToolCall(std::move(call));
}

Result<ToolCall> parse_read(Arguments& a) {
  a.only({"session", "offset", "count", "screen"});
  ReadCall call;
  call.session = a.string("session", true).value_or("");
  call.screen = a.boolean("screen").value_or(false);
  if (auto offset = a.integer("offset", 0)) call.request.offset = *offset;
  if (auto count = a.integer("count", 1)) call.request.count = *count;
  if (a.failed()) return a.error();
  return ToolCall(std::move(call));
}

Result<ToolCall> parse_signal(Arguments& a) {
  a.only({"session", "signal"});
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
  a.only({"session", "rows", "cols"});
  ResizeCall call;
  call.session = a.string("session", true).value_or("");
  auto rows = a.integer("rows", 1);
  auto cols = a.integer("cols", 1);
  if (!a.failed() && (!rows || !cols)) return invalid(std::string("missing argument \"") + (rows ? "cols" : "rows") + "\"");
  if (a.failed()) return a.error();
  // The service checks the upper bound (1..4096) and says so.
  call.rows = static_cast<unsigned>(std::min<std::int64_t>(*rows, 1 << 20));
  call.cols = static_cast<unsigned>(std::min<std::int64_t>(*cols, 1 << 20));
  return ToolCall(std::move(call));
}

Result<ToolCall> parse_close(Arguments& a) {
  a.only({"session"});
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
    a.only({"name"});
    AttachCall call;
    call.name = a.string("name", false);
    if (a.failed()) return Result<ToolCall>(a.error());
    return Result<ToolCall>(ToolCall(std::move(call)));
  }
  if (name == "terminal_list") {
    a.only({});
    if (a.failed()) return Result<ToolCall>(a.error());
    return Result<ToolCall>(ToolCall(ListCall{}));
  }
  return std::nullopt;
}

}  // namespace dshpty::mcp
