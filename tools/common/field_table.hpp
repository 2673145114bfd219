// The one field table per protocol: each JSON Lines op's fields (`dshpty-repl --json`,
// docs/tool-protocol.md) and each MCP tool's arguments (docs/mcp.md), with their type,
// whether they are required, their range or choices, their default and what they mean. A
// field is added here once: the JSON face's strict field check (request_fields.hpp), the MCP
// tools' inputSchema and their unknown-argument check are made from it, and a test holds the
// clients' option lists and the served schema to it (`dshpty-repl --print-fields`).
// The values themselves are read by each face's parser (json_args.hpp), ranges of the wait
// fields checked once in the engine, and the backend's options by the backend.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "dshpty/linger.hpp"

namespace dshpty::tool {

// Bounds every face states the same way (one name each, never the literal; a send's
// timeout and idle: engine::kMaxWaitMs).
inline constexpr std::int64_t kMaxTerminalSide = 4096;  // rows and cols (the service's check)
inline constexpr std::int64_t kMaxLinger = kMaxLingerSeconds;  // a week
inline constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max();

enum class FieldType {
  string,
  integer,
  boolean,
  strings,  // an array of strings
  id,       // any JSON value: a request id as it was written
  object,   // a JSON object (its members are the parser's to check)
};
std::string_view field_type_name(FieldType type);  // "string", "integer", ... as in a JSON Schema

struct Field {
  std::string_view name;
  FieldType type = FieldType::string;
  bool required = false;
  std::int64_t min = 0;  // integers: the range
  std::int64_t max = kUnbounded;
  std::span<const std::string_view> choices{};  // strings: the values it takes (empty: any)
  std::string_view default_value{};             // as the docs write it; empty: none
  std::string_view doc{};                       // what it means (MCP: the model reads it)
};

struct OpFields {
  std::string_view op;  // the JSON op, or the MCP tool's name
  std::span<const Field> fields;
};

// The JSON Lines ops, each with its fields beside `id`, `op` and `owner` (every op's).
std::span<const OpFields> json_ops();
// The MCP tools, each with its arguments.
std::span<const OpFields> mcp_tools();
// The row of `op` in `table`; nullptr when it has none.
const OpFields* find_op(std::span<const OpFields> table, std::string_view op);

}  // namespace dshpty::tool
