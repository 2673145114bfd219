#include "request_fields.hpp"

#include <map>
#include <string>

#include "requests.hpp"

namespace dshpty::tool {

namespace {

// The fields of `open` beyond its backend options (engine::kOpenOptions, every face's).
std::vector<std::string_view> open_fields() {
  std::vector<std::string_view> fields{"type", "name", "cwd"};
  for (const auto& option : engine::kOpenOptions) fields.push_back(option.key);
  fields.push_back("linger");  // whole seconds the session outlives its host (docs/outlive.md)
  return fields;
}

const std::map<std::string_view, std::vector<std::string_view>, std::less<>>& table() {
  static const std::map<std::string_view, std::vector<std::string_view>, std::less<>> rows{
      {"open", open_fields()},
      {"send", {"sessionId", "text", "keys", "submit", "timeoutMs", "idleMs"}},
      {"cancel", {"sendId"}},
      {"output", {"sendId"}},
      {"read", {"sessionId", "offset", "count", "screen"}},
      {"resize", {"sessionId", "rows", "cols"}},
      {"signal", {"sessionId", "signal"}},
      {"close", {"sessionId"}},
      {"attach", {"name"}},
      {"list", {}},
      {"activity", {}},
      {"disposeOwner", {}},
      {"shutdown", {}},
      {"hello", {}},
  };
  return rows;
}

}  // namespace

const std::vector<std::string_view>* op_fields(std::string_view op) {
  const auto it = table().find(op);
  return it == table().end() ? nullptr : &it->second;
}

Status check_fields(std::string_view op, std::span<const std::string_view> names) {
  const auto* fields = op_fields(op);
  if (!fields) return {};
  auto valid = [&](std::string_view name) {
    for (std::string_view common : kCommonFields)
      if (name == common) return true;
    for (std::string_view field : *fields)
      if (name == field) return true;
    return false;
  };
  for (std::string_view name : names) {
    if (valid(name)) continue;
    std::string list;
    for (std::string_view common : kCommonFields) list += (list.empty() ? "" : ", ") + std::string(common);
    for (std::string_view field : *fields) list += ", " + std::string(field);
    return make_error(Code::INVALID_ARGUMENT,
                      "unknown field \"" + std::string(name) + "\" for op \"" + std::string(op) + "\" (valid: " + list + ")");
  }
  return {};
}

}  // namespace dshpty::tool
