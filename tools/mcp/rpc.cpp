#include "rpc.hpp"

#include "json_text_repair.hpp"

namespace dshpty::mcp {

namespace rpc {

Message parse(std::string_view line) {
  Json message = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    // Well-formed but for bad bytes in its strings: answered under its own id (a
    // notification, which has none, gets no answer).
    const tool::RepairedJsonText repaired = tool::repair_json_text(line);
    const Json readable = repaired.changed ? Json::parse(repaired.text, nullptr, false) : Json();
    if (repaired.changed && readable.is_object()) {
      const auto id = readable.find("id");
      if (id == readable.end() || !(id->is_string() || id->is_number_integer())) return Reply{};
      const auto method = readable.find("method");
      const bool call = method != readable.end() && *method == "tools/call";
      return Invalid{*id, kInvalidParams, std::string(tool::kBadBytesMessage), call};
    }
    return Invalid{nullptr, kParseError, "parse error: not valid JSON"};
  }
  // Batches left the protocol in 2025-06-18; no client checked here sends them.
  if (!message.is_object()) return Invalid{nullptr, kInvalidRequest, "a message must be a JSON object"};

  Json id = nullptr;
  const auto id_field = message.find("id");
  const bool has_id = id_field != message.end();
  if (has_id) {
    if (!id_field->is_string() && !id_field->is_number_integer())
      return Invalid{nullptr, kInvalidRequest, "\"id\" must be a string or an integer"};
    id = *id_field;
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
  if (!has_id) return Notification{method->get<std::string>(), std::move(params)};
  return Request{std::move(id), method->get<std::string>(), std::move(params)};
}

Json result(const Json& id, Json result) { return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}; }

Json error(const Json& id, int code, std::string message) {
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", std::move(message)}}}};
}

Json notification(std::string method, Json params) {
  return Json{{"jsonrpc", "2.0"}, {"method", std::move(method)}, {"params", std::move(params)}};
}

std::string serialize(const Json& message) { return message.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string id_key(const Json& id) { return id.dump(); }

}  // namespace rpc

std::string_view negotiate_version(const Json& requested) {
  if (requested.is_string())
    for (const std::string_view version : kProtocolVersions)
      if (requested.get<std::string>() == version) return version;
  return kProtocolVersions[0];
}

}  // namespace dshpty::mcp
