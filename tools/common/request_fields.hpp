// Strict fields: the one table of the fields each JSON op takes (docs/tool-protocol.md). A
// field outside its op's row is refused, naming it and the valid ones, so a misspelt field
// ("timeout" for "timeoutMs") is never ignored in silence. `id`, `op` and `owner` are
// allowed on every op. The rows are the JSON ops' in the one field table (field_table.hpp):
// a new field is added there.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"

namespace dshpty::tool {

// The fields every op takes.
inline constexpr std::string_view kCommonFields[] = {"id", "op", "owner"};

// The fields `op` takes beside the common ones; nullptr for an op that is not in the table.
const std::vector<std::string_view>* op_fields(std::string_view op);

// INVALID_ARGUMENT naming the first of `names` that `op` does not take and the valid
// fields; ok when every name is valid (an unknown op is the parser's to refuse).
Status check_fields(std::string_view op, std::span<const std::string_view> names);

}  // namespace dshpty::tool
