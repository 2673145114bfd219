#include "request_fields.hpp"

#include <map>
#include <string>

#include "field_table.hpp"

namespace dshpty::tool {

namespace {

// The names of each op's fields, from the one table (field_table.hpp).
const std::map<std::string_view, std::vector<std::string_view>, std::less<>>& table() {
  static const auto rows = [] {
    std::map<std::string_view, std::vector<std::string_view>, std::less<>> out;
    for (const OpFields& row : json_ops()) {
      auto& names = out[row.op];
      for (const Field& field : row.fields) names.push_back(field.name);
    }
    return out;
  }();
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
