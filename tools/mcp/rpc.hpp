// JSON-RPC 2.0 as MCP uses it over stdio: one message per line, parsed into a request, a
// notification, a reply (we send no requests, so replies are ignored), a batch (an array
// of messages, which only revision 2025-03-26 allows) or an invalid message with the error
// code to answer it with; and the messages we write. Ids are echoed exactly as they were
// sent (tools/common/json_scan.hpp). Pure: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_scan.hpp"

namespace dshpty::mcp {

using Json = nlohmann::ordered_json;
using RequestId = tool::RequestId;

namespace rpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;

struct Request {
  RequestId id;  // a string or an integer (of any size)
  std::string method;
  Json params;  // an object, or null when absent
};
struct Notification {
  std::string method;
  Json params;
  RequestId request_id;  // params.requestId as sent (notifications/cancelled), else null
};
struct Reply {};
// A JSON array: each item's text, to be parsed as a message of its own.
struct Batch {
  std::vector<std::string> items;
};
struct Invalid {
  RequestId id;  // null when it could not be read
  int code = kInvalidRequest;
  std::string message;
  // A tools/call whose strings held bad bytes: answered as a tool result with isError.
  bool tool_call = false;
};
using Message = std::variant<Request, Notification, Reply, Batch, Invalid>;

// One line. Never throws, whatever the bytes. A key any object holds twice is refused:
// -32600 at the top level, -32602 inside params (a notification's is dropped unanswered).
Message parse(std::string_view line);

// A response line (compact, no newline) with the id as the request wrote it.
std::string result(const RequestId& id, Json result);
std::string error(const RequestId& id, int code, std::string message);
Json notification(std::string method, Json params);
// Compact JSON without a newline; invalid UTF-8 replaced by U+FFFD (dump throws otherwise).
std::string serialize(const Json& message);

}  // namespace rpc

// The one revision served that has JSON-RPC batches (2025-06-18 took them out again).
inline constexpr std::string_view kBatchVersion = "2025-03-26";

// The protocol revisions served, newest first.
inline constexpr std::string_view kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

// The revision to answer `initialize` with: the client's when we serve it, else our newest
// (the client then decides whether it can go on).
std::string_view negotiate_version(const Json& requested);

}  // namespace dshpty::mcp
