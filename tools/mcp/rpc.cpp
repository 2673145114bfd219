#include "rpc.hpp"

#include "json_text_repair.hpp"

namespace dshpty::mcp {

namespace rpc {

Message parse(std::string_view line) {
  if (auto refusal = tool::shape_refusal(line)) {
    const RequestId sent(tool::member_token(line, "id").value_or("null"));
    return Invalid{sent.is_string() || sent.is_integer() ? sent : RequestId(), kInvalidRequest, std::move(*refusal)};
  }
  Json message = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  std::string_view text = line;  // what was parsed: the line, or its repaired copy
  tool::ReadableLine readable;
  if (message.is_discarded()) {
    // Well-formed but for bad bytes in its strings or a number past a double's range:
    // answered under its own id (a notification, which has none, gets no answer).
    readable = tool::make_readable(line);
    if (readable.changed()) message = Json::parse(readable.parse_text, nullptr, false);
    if (!readable.changed() || message.is_discarded()) return Invalid{{}, kParseError, "parse error: not valid JSON"};
    text = readable.text;
  }
  if (message.is_array()) {
    // Items from the line as sent: each one meets its own bad bytes and duplicate keys.
    auto items = tool::array_items(line);
    if (!items) return Invalid{{}, kParseError, "parse error: not valid JSON"};
    return Batch{std::vector<std::string>(items->begin(), items->end())};
  }
  if (!message.is_object()) return Invalid{{}, kInvalidRequest, "a message must be a JSON object"};

  const auto duplicate = tool::find_duplicate_key(text);
  const bool id_unclear = duplicate && (duplicate->path.empty() ? duplicate->key == "id" : duplicate->path[0] == "id");
  const auto id_token = tool::member_token(text, "id");
  const bool has_id = id_token.has_value();
  RequestId id;
  bool id_valid = false;
  if (has_id && !id_unclear) {
    const RequestId sent(*id_token);
    id_valid = sent.is_string() || sent.is_integer();
    if (id_valid) id = sent;
  }
  if (duplicate) {
    if (!has_id && !duplicate->path.empty()) return Reply{};  // a notification's params: no answer
    const bool in_params = !duplicate->path.empty() && duplicate->path[0] != "id";
    return Invalid{id, in_params ? kInvalidParams : kInvalidRequest, duplicate->message()};
  }
  if (readable.bad_bytes) {
    if (!id_valid) return Reply{};
    const auto method = message.find("method");
    const bool call = method != message.end() && *method == "tools/call";
    return Invalid{id, kInvalidParams, std::string(tool::kBadBytesMessage), call};
  }
  if (has_id && !id_valid) return Invalid{{}, kInvalidRequest, "\"id\" must be a string or an integer"};
  if (readable.huge_outside(id_token.value_or(std::string_view()))) {
    if (!has_id) return Reply{};
    return Invalid{id, kInvalidParams, "a number in the message is out of range"};
  }
  const auto version = message.find("jsonrpc");
  if (version == message.end() || *version != "2.0") return Invalid{id, kInvalidRequest, "\"jsonrpc\" must be \"2.0\""};

  const auto method = message.find("method");
  if (method == message.end()) {
    if (has_id && (message.contains("result") || message.contains("error"))) return Reply{};
    return Invalid{id, kInvalidRequest, "missing \"method\""};
  }
  if (!method->is_string()) return Invalid{id, kInvalidRequest, "\"method\" must be a string"};

  Json params = nullptr;
  if (const auto p = message.find("params"); p != message.end() && !p->is_null()) {
    if (!p->is_object()) return Invalid{id, kInvalidRequest, "\"params\" must be an object"};
    params = *p;
  }
  if (!has_id) {
    Notification notification{method->get<std::string>(), std::move(params), {}};
    if (const auto raw = tool::member_token(text, "params"))
      if (const auto request_id = tool::member_token(*raw, "requestId")) notification.request_id = RequestId(*request_id);
    return notification;
  }
  return Request{std::move(id), method->get<std::string>(), std::move(params)};
}

std::string serialize(const Json& message) { return message.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string result(const RequestId& id, Json result) {
  return tool::with_id(id, serialize(Json{{"jsonrpc", "2.0"}, {"result", std::move(result)}}));
}

std::string error(const RequestId& id, int code, std::string message) {
  return tool::with_id(
      id, serialize(Json{{"jsonrpc", "2.0"}, {"error", {{"code", code}, {"message", std::move(message)}}}}));
}

Json notification(std::string method, Json params) {
  return Json{{"jsonrpc", "2.0"}, {"method", std::move(method)}, {"params", std::move(params)}};
}

}  // namespace rpc

std::string_view negotiate_version(const Json& requested) {
  if (requested.is_string())
    for (const std::string_view version : kProtocolVersions)
      if (requested.get<std::string>() == version) return version;
  return kProtocolVersions[0];
}

}  // namespace dshpty::mcp
