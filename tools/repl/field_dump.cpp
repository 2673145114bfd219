#include "field_dump.hpp"

#include <nlohmann/json.hpp>

#include "field_table.hpp"

namespace dshpty::repl {

namespace {

using Json = nlohmann::ordered_json;

Json encode_fields(std::span<const tool::Field> row) {
  Json fields = Json::array();
  for (const tool::Field& field : row) {
    Json f{{"name", std::string(field.name)},
           {"type", std::string(tool::field_type_name(field.type))},
           {"required", field.required}};
    if (field.type == tool::FieldType::integer) {
      f["minimum"] = field.min;
      if (field.max != tool::kUnbounded) f["maximum"] = field.max;
    }
    if (!field.choices.empty()) {
      f["enum"] = Json::array();
      for (std::string_view choice : field.choices) f["enum"].push_back(std::string(choice));
    }
    if (!field.default_value.empty()) f["default"] = std::string(field.default_value);
    if (!field.members.empty()) f["members"] = encode_fields(field.members);
    fields.push_back(std::move(f));
  }
  return fields;
}

Json encode(std::span<const tool::OpFields> table) {
  Json out = Json::object();
  for (const tool::OpFields& row : table) out[std::string(row.op)] = encode_fields(row.fields);
  return out;
}

}  // namespace

std::string field_table_json() {
  return Json{{"json", encode(tool::json_ops())}, {"mcp", encode(tool::mcp_tools())}}.dump(1) + "\n";
}

}  // namespace dshpty::repl
