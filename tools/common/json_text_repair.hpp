// Requests whose strings hold bad bytes still get their own id back. A JSON parser refuses
// a line whose strings hold invalid UTF-8 or a lone surrogate escape (\ud800) as a whole,
// so the answer would go to id null and a client waiting on its id would hang. This makes
// such a line parseable: each ill-formed sequence becomes U+FFFD and each lone surrogate
// escape \ufffd, and says whether it changed anything, so a face can parse the repaired
// line only to read its id and refuse the request (INVALID_ARGUMENT). Pure, no JSON library.
#pragma once

#include <string>
#include <string_view>

namespace dshpty::tool {

struct RepairedJsonText {
  std::string text;
  bool changed = false;  // the line held invalid UTF-8 or a lone surrogate escape
};

RepairedJsonText repair_json_text(std::string_view line);

inline constexpr std::string_view kBadBytesMessage =
    "the request's strings hold invalid UTF-8 or a lone surrogate escape";

}  // namespace dshpty::tool
