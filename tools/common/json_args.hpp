// The one reader of a request's JSON fields for every JSON face: `dshpty-repl --json`'s
// fields and dshpty-mcp's tool arguments read the same values the same way
// (docs/tool-protocol.md, "Numbers and null"):
//   - null is the same as absent: an optional field takes its default, a required one is
//     missing;
//   - an integer may be written as a float with a whole value (5000.0 is 5000; 1.5 is no
//     integer), since some clients send every number as a double.
// Each reader returns nullopt when the field is absent or wrong; the first wrong one is kept
// as an INVALID_ARGUMENT naming it ("field" or "argument", as the face calls them).
// Header only: included by the faces that bring nlohmann-json.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/errors.hpp"
#include "dshpty/result.hpp"
#include "dshpty/session.hpp"

namespace dshpty::tool {

// The integer a JSON number stands for, under the rule above; nullopt for 1.5, a string, ...
template <class Json>
std::optional<std::int64_t> json_integer(const Json& value) {
  if (value.is_number_unsigned()) {
    const auto u = value.template get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return static_cast<std::int64_t>(u);
    return std::nullopt;
  }
  if (value.is_number_integer()) return value.template get<std::int64_t>();
  if (value.is_number_float()) {
    const double d = value.template get<double>();
    // 2^63 is the first double past int64's range; the cast below is defined only inside it.
    if (std::isfinite(d) && d == std::trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
      return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

template <class Json>
class JsonArgs {
 public:
  // `noun` is how the face names a field in its messages: "field" or "argument".
  JsonArgs(const Json& object, std::string_view noun) : object_(object), noun_(noun) {}
  const Error& error() const { return error_; }
  bool failed() const { return static_cast<bool>(error_); }

  // Present and not null.
  bool has(std::string_view name) const {
    const auto it = object_.find(std::string(name));
    return it != object_.end() && !it->is_null();
  }
  std::optional<std::string> string(std::string_view name, bool required = false) {
    const Json* field = find(name, required);
    if (!field) return std::nullopt;
    if (!field->is_string()) return fail(name, "must be a string");
    return field->template get<std::string>();
  }
  std::optional<bool> boolean(std::string_view name) {
    const Json* field = find(name, false);
    if (!field) return std::nullopt;
    if (!field->is_boolean()) return fail(name, "must be true or false");
    return field->template get<bool>();
  }
  std::optional<std::vector<std::string>> strings(std::string_view name) {
    const Json* field = find(name, false);
    if (!field) return std::nullopt;
    std::vector<std::string> out;
    if (field->is_array())
      for (const Json& item : *field) {
        if (!item.is_string()) break;
        out.push_back(item.template get<std::string>());
      }
    if (!field->is_array() || out.size() != field->size()) return fail(name, "must be an array of strings");
    return out;
  }
  // An integer (the range is the caller's, or the engine's, to check).
  std::optional<std::int64_t> integer(std::string_view name, bool required = false) {
    const Json* field = find(name, required);
    if (!field) return std::nullopt;
    const auto value = json_integer(*field);
    if (!value) return fail(name, "must be an integer");
    return value;
  }
  // An integer in min..max; anything else fails with `what` ("must be whole seconds 0..N"),
  // or "must be at least MIN" / "must be an integer" when `what` is empty.
  std::optional<std::int64_t> integer_in(std::string_view name, std::int64_t min, std::int64_t max,
                                         std::string_view what = {}, bool required = false) {
    const Json* field = find(name, required);
    if (!field) return std::nullopt;
    const auto value = json_integer(*field);
    if (!what.empty() && (!value || *value < min || *value > max)) return fail(name, what);
    if (!value) return fail(name, "must be an integer");
    if (*value < min) return fail(name, "must be at least " + std::to_string(min));
    if (*value > max) return fail(name, "must be at most " + std::to_string(max));
    return value;
  }
  // A session's limits, {"pids": N, "memory": BYTES, "cpu": FRACTION}: each a positive
  // number (pids and memory whole); another member fails naming it ("limits.x"). The
  // ranges and the operator's ceilings are the backend's to check (it names them alike).
  std::optional<Limits> limits(std::string_view name) {
    const Json* field = find(name, false);
    if (!field) return std::nullopt;
    if (!field->is_object()) return fail(name, "must be an object: {\"pids\": N, \"memory\": BYTES, \"cpu\": F}");
    Limits out;
    for (auto it = field->begin(); it != field->end(); ++it) {
      const std::string member = std::string(name) + "." + it.key();
      if (it->is_null()) continue;  // absent, as everywhere
      if (it.key() == "cpu") {
        if (!it->is_number() || !(it->template get<double>() > 0)) return fail(member, "must be a positive number");
        out.cpu = it->template get<double>();
      } else if (it.key() == "pids" || it.key() == "memory") {
        const auto value = json_integer(*it);
        if (!value || *value < 1) return fail(member, "must be a positive integer");
        (it.key() == "pids" ? out.pids : out.memory) = static_cast<std::uint64_t>(*value);
      } else {
        return fail(member, "is no limit (pids, memory, cpu)");
      }
    }
    return out;
  }
  // A send's condition, `{"output": REGEX, "port": N}` (either or both; the regex and the
  // port's range are the backend's to check, one rule on every face).
  std::optional<SendUntil> until(std::string_view name) {
    const Json* field = find(name, false);
    if (!field) return std::nullopt;
    if (!field->is_object()) return fail(name, "must be an object {\"output\": REGEX, \"port\": N}");
    SendUntil out;
    for (const auto& [key, value] : field->items()) {
      if (key == "output" && value.is_string()) {
        out.output_regex = value.template get<std::string>();
      } else if (key == "port" && json_integer(value) && *json_integer(value) >= std::numeric_limits<int>::min() &&
                 *json_integer(value) <= std::numeric_limits<int>::max()) {
        out.port = static_cast<int>(*json_integer(value));
      } else if (key == "output" || key == "port") {
        return fail(std::string(name) + "." + key, key == "output" ? "must be a string" : "must be an integer");
      } else {
        return fail(name, "has an unknown member \"" + key + "\" (output, port)");
      }
    }
    if (!out.any()) return fail(name, "must name \"output\" or \"port\"");
    return out;
  }

  // Any value but null (an id echoed as written); nullptr when absent.
  const Json* any(std::string_view name, bool required) { return find(name, required); }

  // Fails naming `name`: "<noun> \"name\" <what>".
  std::nullopt_t fail(std::string_view name, std::string_view what) {
    if (!error_)
      error_ = make_error(Code::INVALID_ARGUMENT,
                          std::string(noun_) + " \"" + std::string(name) + "\" " + std::string(what));
    return std::nullopt;
  }
  std::nullopt_t fail(Error error) {
    if (!error_) error_ = std::move(error);
    return std::nullopt;
  }

 private:
  const Json* find(std::string_view name, bool required) {
    if (error_) return nullptr;
    const auto it = object_.find(std::string(name));
    if (it == object_.end() || it->is_null()) {
      if (required) error_ = make_error(Code::INVALID_ARGUMENT, "missing " + std::string(noun_) + " \"" + std::string(name) + "\"");
      return nullptr;
    }
    return &*it;
  }

  const Json& object_;
  std::string_view noun_;
  Error error_;
};

}  // namespace dshpty::tool
