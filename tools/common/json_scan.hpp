// A request line read as its client wrote it, beside the JSON library's reading of it.
// A parser builds one value per key and keeps the last of two (`"op":"list","op":"shutdown"`
// runs a shutdown), and turns numbers into doubles (9007199254740993 comes back as
// 9007199254740992, 1e400 as null). So every face that parses JSON (dshpty-repl --json,
// dshpty-mcp) also scans the same text here: a key an object holds twice is refused, and an
// id is echoed as the exact token that was sent. Pure, iterative (no recursion however deep
// the nesting), no JSON library; meant for text the face's parser has accepted, and safe (it
// never reads out of bounds) on any other.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dshpty::tool {

// The first key that an object of `text` holds twice, compared after decoding escapes
// ("op" and "\u006fp" are one key), and the member names that lead to that object
// (empty: the top level; {"params", "arguments"} for one inside a call's arguments).
struct DuplicateKey {
  std::string key;
  std::vector<std::string> path;
  // "duplicate key \"op\"" or "duplicate key \"op\" in \"params.arguments\"".
  std::string message() const;
};
std::optional<DuplicateKey> find_duplicate_key(std::string_view text);

// What a line may hold before it is parsed at all. The parsers keep an object's keys in
// insertion order, and inserting each one looks through those before it: 90,000 keys in
// one 1 MiB line held the loop for 49 s. And each level of nesting costs a node: 300,000
// `[` took 98 MB. No request needs more than a few dozen keys or a few levels, so a line
// past either bound is refused unparsed (the check is one linear pass).
inline constexpr std::size_t kMaxKeysPerObject = 1024;
inline constexpr std::size_t kMaxDepth = 64;
// Why `text` is past a bound ("an object holds more than 1024 keys"), or nullopt.
std::optional<std::string> shape_refusal(std::string_view text);

// The text of member `key`'s value in the JSON object `object` (keys decoded before they
// are compared), exactly as written; nullopt when `object` is no object or has no such key.
std::optional<std::string_view> member_token(std::string_view object, std::string_view key);

// The text of each item of the JSON array `array`, exactly as written; nullopt when it is
// no array.
std::optional<std::vector<std::string_view>> array_items(std::string_view array);

// The content of a JSON string token (quotes included) with its escapes decoded.
std::string decode_string(std::string_view token);

// A line the face's parser refused, made parseable where it can be: bad bytes in its
// strings repaired (json_text_repair.hpp), and numbers past a double's range (1e400, which
// the parser refuses the whole line for) replaced by 0. `text` is the repaired line, whose
// tokens (an id) are still as sent; `parse_text` is what to parse.
struct ReadableLine {
  std::string text;
  std::string parse_text;
  bool bad_bytes = false;
  std::vector<std::pair<std::size_t, std::size_t>> huge;  // offset and length in `text`
  bool changed() const noexcept { return bad_bytes || !huge.empty(); }
  // Whether a replaced number stood outside `token` (a view into `text`, or empty).
  bool huge_outside(std::string_view token) const noexcept;
};
ReadableLine make_readable(std::string_view line);

// A request's id as its client wrote it. A response echoes the token byte for byte; two
// tokens that name the same id ("a" and "\u0061") have the same key.
class RequestId {
 public:
  RequestId() = default;  // none could be read: answered as null
  explicit RequestId(std::string_view token) : token_(token) {}
  const std::string& token() const noexcept { return token_; }
  bool is_null() const noexcept { return token_ == "null"; }
  bool is_string() const noexcept { return !token_.empty() && token_[0] == '"'; }
  // A number without fraction or exponent, of any size: -0 and 12345678901234567890123 too.
  bool is_integer() const noexcept;
  // Strings by their decoded content, anything else by its text.
  std::string key() const;
  friend bool operator==(const RequestId& a, const RequestId& b) { return a.key() == b.key(); }

 private:
  std::string token_ = "null";
};

// `object` (a compact JSON object's text) with "id":TOKEN as its first member.
std::string with_id(const RequestId& id, std::string_view object);

}  // namespace dshpty::tool
