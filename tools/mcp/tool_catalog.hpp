// The model-facing tools (docs/mcp.md): their names, the descriptions that teach the model
// their semantics, their input schemas (made from the MCP rows of the one field table,
// field_table.hpp), and the arguments of a call checked into engine requests. Pure: no
// service, no I/O.
//
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dshpty/result.hpp"
#include "dshpty/session.hpp"
#include "engine.hpp"
#include "requests.hpp"
#include "rpc.hpp"

namespace dshpty::mcp {

// `session` is what the model wrote: an id (pty-1) or the name the session was opened with.
struct OpenCall {
  engine::OpenRequest request;
};
struct SendCall {
  std::string session;
  SendRequest request;  // request.background: run_in_background
};
struct OutputCall {
  std::string job;
  std::optional<std::chrono::milliseconds> wait{};
};
struct StopCall {
  std::string job;
};
struct ReadCall {
  std::string session;
  ReadRequest request;
  bool screen = false;  // the rendered screen instead of a scrollback page
};
struct ResizeCall {
  std::string session;
  unsigned rows = 0;
  unsigned cols = 0;
};
struct SignalCall {
  std::string session;
  Signal signal = Signal::sigint;
};
struct CloseCall {
  std::string session;
};
struct ListCall {};
struct AttachCall {
  std::optional<std::string> name;
};
using ToolCall = std::variant<OpenCall, SendCall, ReadCall, SignalCall, CloseCall, ListCall, ResizeCall, AttachCall,
                              OutputCall, StopCall>;

// The `tools` array of a tools/list result; terminal_open's `type` names `backend_types`
// (the service's, e.g. "shell" and each --remote NAME); its `sandbox` and `network` list what
// the operator's `policy` allows.
Json tool_list(const std::vector<std::string>& backend_types = {"shell"}, const engine::Settings::Policy& policy = {});

// nullopt when `name` is no tool of ours; else the call, or INVALID_ARGUMENT naming the
// argument that is missing, mistyped or unknown (the model can fix it and call again).
std::optional<Result<ToolCall>> parse_tool_call(std::string_view name, const Json& arguments);

}  // namespace dshpty::mcp
