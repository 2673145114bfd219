// JSON-RPC 2.0 as MCP uses it over stdio: one message per line, parsed into a request, a
// notification, a reply (we send no requests, so replies are ignored) or an invalid
// message with the error code to answer it with; and the messages we write. Pure: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace dshpty::mcp {

using Json = nlohmann::ordered_json;

namespace rpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;

struct Request {
  Json id;  // a string or an integer
  std::string method;
  Json params;  // an object, or null when absent
};
struct Notification {
  std::string method;
  Json params;
};
struct Reply {};
struct Invalid {
  Json id;  // null when it could not be read
  int code = kInvalidRequest;
  std::string message;
  // A tools/call whose strings held bad bytes: answered as a tool result with isError.
  bool tool_call = false;
};
using Message = std::variant<Request, Notification, Reply, Invalid>;

// One line. Never throws, whatever the bytes.
Message parse(std::string_view line);

Json result(const Json& id, Json result);
Json error(const Json& id, int code, std::string message);
Json notification(std::string method, Json params);
// Compact JSON without a newline; invalid UTF-8 replaced by U+FFFD (dump throws otherwise).
std::string serialize(const Json& message);

// The key that matches a request's id to a later notifications/cancelled's requestId.
std::string id_key(const Json& id);

}  // namespace rpc

// The protocol revisions served, newest first.
inline constexpr std::string_view kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

// The revision to answer `initialize` with: the client's when we serve it, else our newest
// (the client then decides whether it can go on).
std::string_view negotiate_version(const Json& requested);

}  // namespace dshpty::mcp
