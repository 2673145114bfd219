#include "text/line_regex.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

namespace dshpty::text {
namespace {

using Op = LineRegex::Op;
using ByteSet = std::bitset<256>;

constexpr std::size_t kMaxDepth = 200;  // groups within groups: bounds the recursion

bool is_word(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

ByteSet range(unsigned char from, unsigned char to) {
  ByteSet s;
  for (unsigned c = from; c <= to; ++c) s.set(c);
  return s;
}

ByteSet digits() { return range('0', '9'); }
ByteSet words() { return range('a', 'z') | range('A', 'Z') | digits() | range('_', '_'); }
// std::regex's \s over char in the C locale: isspace().
ByteSet spaces() { return range('\t', '\r') | range(' ', ' '); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A refusal, caught in LineRegex::compile: the parser is recursive, and every caller would
// otherwise check every return.
struct Refused {
  std::string message;
};

// The syntax tree, flat: nodes refer to their children by index.
struct Node {
  enum class Kind : std::uint8_t { empty, set, assertion, concat, alternation, repeat };
  Kind kind = Kind::empty;
  std::uint32_t set = 0;        // set: its index in sets
  Op assertion = Op::match;     // assertion: line_start, line_end, word_edge, not_word_edge
  std::vector<std::uint32_t> kids;
  std::uint32_t min = 0, max = 0;
  bool unbounded = false;       // repeat: no upper count
  std::size_t size = 0;         // the instructions it compiles to
};

Node node(Node::Kind kind, std::size_t size = 0) {
  Node n;
  n.kind = kind;
  n.size = size;
  return n;
}

Node assertion_node(Op op) {
  Node n = node(Node::Kind::assertion, 1);
  n.assertion = op;
  return n;
}

// One escape's meaning: a byte string, a set, or an assertion.
struct Escape {
  std::string bytes;
  std::optional<ByteSet> set;
  Op assertion = Op::match;
};

}  // namespace

class LineRegexCompiler {
 public:
  explicit LineRegexCompiler(std::string_view pattern) : p_(pattern) {}

  LineRegex run() {
    const std::uint32_t root = disjunction(0);
    if (i_ < p_.size()) refuse("unmatched ')' at offset " + std::to_string(i_));
    LineRegex regex;
    regex.sets_ = std::move(sets_);
    regex.program_.reserve(nodes_[root].size + 1);
    emit(root, regex.program_);
    regex.program_.push_back({Op::match});
    return regex;
  }

 private:
  [[noreturn]] static void refuse(std::string message) { throw Refused{std::move(message)}; }

  bool at_end() const { return i_ >= p_.size(); }
  char peek(std::size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : '\0'; }
  bool has(std::size_t ahead) const { return i_ + ahead < p_.size(); }

  std::uint32_t add(Node node) {
    if (node.size > LineRegex::kMaxProgram) {
      refuse("the pattern is too large: it compiles to more than " +
             std::to_string(LineRegex::kMaxProgram) + " steps (a repeat count or the pattern's length)");
    }
    nodes_.push_back(std::move(node));
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }
  std::uint32_t set_node(const ByteSet& set) {
    sets_.push_back(set);
    Node n = node(Node::Kind::set, 1);
    n.set = static_cast<std::uint32_t>(sets_.size() - 1);
    return add(std::move(n));
  }
  std::uint32_t bytes_node(std::string_view bytes) {
    Node n = node(Node::Kind::concat);
    for (unsigned char c : bytes) n.kids.push_back(set_node(range(c, c)));
    n.size = bytes.size();
    return add(std::move(n));
  }

  std::uint32_t disjunction(std::size_t depth) {
    if (depth > kMaxDepth) refuse("groups are nested more than " + std::to_string(kMaxDepth) + " deep");
    Node alt = node(Node::Kind::alternation);
    alt.kids.push_back(alternative(depth));
    while (peek() == '|' && has(0)) {
      ++i_;
      alt.kids.push_back(alternative(depth));
    }
    if (alt.kids.size() == 1) return alt.kids[0];
    for (auto k : alt.kids) alt.size += nodes_[k].size;
    alt.size += 2 * (alt.kids.size() - 1);
    return add(std::move(alt));
  }

  std::uint32_t alternative(std::size_t depth) {
    Node seq = node(Node::Kind::concat);
    while (!at_end() && peek() != '|' && peek() != ')') {
      std::uint32_t t = term(depth);
      seq.size += nodes_[t].size;
      seq.kids.push_back(t);
      if (seq.size > LineRegex::kMaxProgram) add(std::move(seq));  // refuses
    }
    return add(std::move(seq));
  }

  std::uint32_t term(std::size_t depth) {
    const std::size_t start = i_;
    const char c = peek();
    std::uint32_t atom;
    bool repeatable = true;
    switch (c) {
      case '^':
        ++i_;
        atom = add(assertion_node(Op::line_start));
        repeatable = false;
        break;
      case '$':
        ++i_;
        atom = add(assertion_node(Op::line_end));
        repeatable = false;
        break;
      case '.':
        ++i_;
        atom = set_node(~(range('\n', '\n') | range('\r', '\r')));
        break;
      case '[':
        atom = set_node(bracket());
        break;
      case '(':
        atom = group(depth);
        break;
      case '*':
      case '+':
      case '?':
        refuse(std::string("nothing to repeat before '") + c + "' at offset " + std::to_string(i_));
      case '{':
        if (quantifier_ahead()) refuse("nothing to repeat before '{' at offset " + std::to_string(i_));
        ++i_;
        atom = bytes_node("{");
        break;
      case '\\': {
        Escape e = escape(/*in_class=*/false);
        if (e.set) {
          atom = set_node(*e.set);
        } else if (e.assertion != Op::match) {
          atom = add(assertion_node(e.assertion));
          repeatable = false;
        } else {
          atom = bytes_node(e.bytes);
        }
        break;
      }
      default:
        // A character is one atom: `é{2}` repeats é, not its last byte.
        ++i_;
        if ((static_cast<unsigned char>(c) & 0xC0) == 0xC0) {
          while (i_ < p_.size() && (static_cast<unsigned char>(p_[i_]) & 0xC0) == 0x80) ++i_;
        }
        atom = bytes_node(std::string_view(&p_[start], i_ - start));
        break;
    }
    return quantified(atom, repeatable, start);
  }

  // Whether a quantifier starts at i_: * + ? or a well-formed {m}, {m,}, {m,n}.
  bool quantifier_ahead() const {
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') return has(0);
    if (c != '{') return false;
    std::size_t j = i_ + 1;
    auto digits_at = [&] {
      std::size_t from = j;
      while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') ++j;
      return j > from;
    };
    if (!digits_at()) return false;
    if (j < p_.size() && p_[j] == ',') {
      ++j;
      digits_at();
    }
    return j < p_.size() && p_[j] == '}';
  }

  std::uint32_t count() {
    std::uint64_t n = 0;
    while (peek() >= '0' && peek() <= '9' && has(0)) {
      n = std::min<std::uint64_t>(n * 10 + static_cast<unsigned>(peek() - '0'), 1u << 30);
      ++i_;
    }
    if (n > LineRegex::kMaxRepeat)
      refuse("a repeat count over " + std::to_string(LineRegex::kMaxRepeat) + " at offset " + std::to_string(i_));
    return static_cast<std::uint32_t>(n);
  }

  std::uint32_t quantified(std::uint32_t atom, bool repeatable, std::size_t start) {
    if (!quantifier_ahead()) return atom;
    if (!repeatable) refuse("nothing to repeat: an anchor or \\b cannot take a quantifier (offset " + std::to_string(start) + ")");
    Node rep = node(Node::Kind::repeat);
    rep.kids.push_back(atom);
    const char c = p_[i_++];
    if (c == '*') {
      rep.unbounded = true;
    } else if (c == '+') {
      rep.min = 1;
      rep.unbounded = true;
    } else if (c == '?') {
      rep.max = 1;
    } else {
      rep.min = rep.max = count();
      if (peek() == ',') {
        ++i_;
        if (peek() == '}') {
          rep.unbounded = true;
        } else {
          rep.max = count();
        }
      }
      ++i_;  // '}'
      if (!rep.unbounded && rep.max < rep.min)
        refuse("a repeat {m,n} with n < m at offset " + std::to_string(start));
    }
    if (peek() == '?' && has(0)) ++i_;  // lazy: the same yes/no
    if (quantifier_ahead()) refuse("nothing to repeat: a quantifier after a quantifier at offset " + std::to_string(i_));
    const std::uint64_t s = nodes_[atom].size;
    std::uint64_t size = s * rep.min + (rep.unbounded ? s + 2 : (s + 1) * (rep.max - rep.min));
    rep.size = static_cast<std::size_t>(std::min<std::uint64_t>(size, LineRegex::kMaxProgram + 1));
    return add(std::move(rep));
  }

  std::uint32_t group(std::size_t depth) {
    const std::size_t start = i_;
    ++i_;  // '('
    if (peek() == '?') {
      const char k = peek(1);
      const char k2 = peek(2);
      std::string at = " (offset " + std::to_string(start) + ")";
      if (k == ':') {
        i_ += 2;
      } else if (k == '=' || k == '!') {
        refuse("lookahead is not supported" + at);
      } else if (k == '<' && (k2 == '=' || k2 == '!')) {
        refuse("lookbehind is not supported" + at);
      } else if (k == '<') {
        refuse("named groups are not supported" + at);
      } else {
        refuse("inline flags and other (?...) groups are not supported" + at);
      }
    }
    const std::uint32_t inner = disjunction(depth + 1);
    if (peek() != ')' || at_end()) refuse("a '(' at offset " + std::to_string(start) + " is not closed");
    ++i_;
    return inner;
  }

  // At '\\'. Outside a class \b and \B are assertions; inside, \b is a backspace.
  Escape escape(bool in_class) {
    const std::size_t start = i_;
    ++i_;
    if (at_end()) refuse("a pattern cannot end with '\\'");
    const char c = p_[i_++];
    Escape e;
    auto byte = [&](unsigned char b) { e.bytes.assign(1, static_cast<char>(b)); };
    auto hex = [&](std::size_t n) {
      std::uint32_t v = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const int h = has(0) ? hex_value(peek()) : -1;
        if (h < 0) refuse(std::string("\\") + c + " needs " + std::to_string(n) + " hex digits (offset " + std::to_string(start) + ")");
        v = v * 16 + static_cast<std::uint32_t>(h);
        ++i_;
      }
      return v;
    };
    switch (c) {
      case 'd': e.set = digits(); break;
      case 'D': e.set = ~digits(); break;
      case 'w': e.set = words(); break;
      case 'W': e.set = ~words(); break;
      case 's': e.set = spaces(); break;
      case 'S': e.set = ~spaces(); break;
      case 'b':
        if (in_class) byte('\b');
        else e.assertion = Op::word_edge;
        break;
      case 'B':
        if (in_class) refuse("\\B inside a class (offset " + std::to_string(start) + ")");
        e.assertion = Op::not_word_edge;
        break;
      case 't': byte('\t'); break;
      case 'n': byte('\n'); break;
      case 'v': byte('\v'); break;
      case 'f': byte('\f'); break;
      case 'r': byte('\r'); break;
      case '0':
        if (peek() >= '0' && peek() <= '9' && has(0))
          refuse("octal escapes are not supported (offset " + std::to_string(start) + ")");
        byte('\0');
        break;
      case 'x': byte(static_cast<unsigned char>(hex(2))); break;
      case 'u': {
        if (peek() == '{') refuse("\\u{...} is not supported: use \\uHHHH (offset " + std::to_string(start) + ")");
        const std::uint32_t cp = hex(4);
        if (cp >= 0xD800 && cp <= 0xDFFF) refuse("\\u of a surrogate is not supported (offset " + std::to_string(start) + ")");
        append_utf8(e.bytes, cp);
        break;
      }
      case 'c': {
        const char l = peek();
        if (!has(0) || !((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')))
          refuse("\\c needs a letter (offset " + std::to_string(start) + ")");
        ++i_;
        byte(static_cast<unsigned char>(l % 32));
        break;
      }
      case 'k':
        refuse("backreferences are not supported (\\k at offset " + std::to_string(start) + ")");
      default:
        if (c >= '1' && c <= '9')
          refuse(std::string("backreferences are not supported (\\") + c + " at offset " + std::to_string(start) + ")");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
          refuse(std::string("unknown escape \\") + c + " (offset " + std::to_string(start) + ")");
        byte(static_cast<unsigned char>(c));  // punctuation (or any other byte) stands for itself
        break;
    }
    return e;
  }

  // At '['. ECMAScript: `[]` matches nothing, `[^]` any byte.
  ByteSet bracket() {
    const std::size_t start = i_;
    ++i_;
    bool negated = false;
    if (peek() == '^' && has(0)) {
      negated = true;
      ++i_;
    }
    ByteSet set;
    for (;;) {
      if (at_end()) refuse("a '[' at offset " + std::to_string(start) + " is not closed");
      if (peek() == ']') {
        ++i_;
        break;
      }
      Escape lo = class_atom();
      ascii_only(lo, start);
      if (peek() == '-' && has(1) && peek(1) != ']') {
        ++i_;
        Escape hi = class_atom();
        ascii_only(hi, start);
        if (lo.set || hi.set || lo.bytes.size() != 1 || hi.bytes.size() != 1)
          refuse("a range in a class needs a single character at each end (offset " + std::to_string(start) + ")");
        const auto a = static_cast<unsigned char>(lo.bytes[0]);
        const auto b = static_cast<unsigned char>(hi.bytes[0]);
        if (a > b) refuse("a range out of order in a class (offset " + std::to_string(start) + ")");
        set |= range(a, b);
        continue;
      }
      if (lo.set) {
        set |= *lo.set;
      } else {
        set.set(static_cast<unsigned char>(lo.bytes[0]));
      }
    }
    return negated ? ~set : set;
  }

  // A class matches one byte: a character of several UTF-8 bytes in it would stand for
  // each of its bytes, so `[✓✗]` would match an em dash (both start E2). Refused, with
  // the way to say it (a byte \x80-\xFF is refused too: ECMAScript reads it as U+0080..).
  void ascii_only(const Escape& e, std::size_t start) {
    for (char b : e.bytes)
      if (static_cast<unsigned char>(b) >= 0x80)
        refuse("a class holds only ASCII characters (offset " + std::to_string(start) +
               "): write the choice of other characters as a group, (?:✓|✗)");
  }

  Escape class_atom() {
    if (peek() == '\\') return escape(/*in_class=*/true);
    Escape e;
    e.bytes.assign(1, p_[i_++]);
    return e;
  }

  // Appends the node's instructions; targets are absolute indices.
  void emit(std::uint32_t index, std::vector<LineRegex::Inst>& out) {
    const Node& n = nodes_[index];
    auto here = [&] { return static_cast<std::uint32_t>(out.size()); };
    switch (n.kind) {
      case Node::Kind::empty:
        return;
      case Node::Kind::set:
        out.push_back({Op::byte, n.set});
        return;
      case Node::Kind::assertion:
        out.push_back({n.assertion});
        return;
      case Node::Kind::concat:
        for (auto k : n.kids) emit(k, out);
        return;
      case Node::Kind::alternation: {
        std::vector<std::size_t> jumps;
        for (std::size_t k = 0; k + 1 < n.kids.size(); ++k) {
          const std::size_t split = out.size();
          out.push_back({Op::split, here() + 1});
          emit(n.kids[k], out);
          jumps.push_back(out.size());
          out.push_back({Op::jump});
          out[split].y = here();
        }
        emit(n.kids.back(), out);
        for (auto j : jumps) out[j].x = here();
        return;
      }
      case Node::Kind::repeat: {
        const std::uint32_t body = n.kids[0];
        for (std::uint32_t k = 0; k < n.min; ++k) emit(body, out);
        if (n.unbounded) {
          const std::uint32_t loop = here();
          out.push_back({Op::split, loop + 1});
          emit(body, out);
          out.push_back({Op::jump, loop});
          out[loop].y = here();
          return;
        }
        std::vector<std::size_t> splits;
        for (std::uint32_t k = n.min; k < n.max; ++k) {
          splits.push_back(out.size());
          out.push_back({Op::split, here() + 1});
          emit(body, out);
        }
        for (auto s : splits) out[s].y = here();
        return;
      }
    }
  }

  std::string_view p_;
  std::size_t i_ = 0;
  std::vector<Node> nodes_;
  std::vector<ByteSet> sets_;
};

Result<LineRegex> LineRegex::compile(std::string_view pattern) {
  if (pattern.size() > kMaxPatternBytes) {
    return make_error(Code::INVALID_ARGUMENT, "the pattern is longer than " + std::to_string(kMaxPatternBytes) + " bytes");
  }
  try {
    return LineRegexCompiler(pattern).run();
  } catch (const Refused& r) {
    return make_error(Code::INVALID_ARGUMENT, r.message);
  }
}

bool LineRegex::search(std::string_view line, Ending ending, std::uint64_t* steps) const {
  std::uint64_t stepped = 0;
  const bool found = run(line, ending, stepped);
  if (steps) *steps += stepped;
  return found;
}

bool LineRegex::run(std::string_view line, Ending ending, std::uint64_t& stepped) const {
  // The Pike VM: `now` holds every byte-reading state the program can be in before byte
  // `at` (each state once: a step costs at most the program's size), `next` after it. A
  // new start is added at every position: the match may begin anywhere. A state reached
  // without reading (a split, a jump, an assertion that holds) is followed at once.
  const std::size_t n = program_.size();
  std::vector<std::uint32_t> now, next, stack;
  now.reserve(n);
  next.reserve(n);
  stack.reserve(n);
  std::vector<std::uint32_t> seen(n, 0);  // == generation: already in this position's list
  std::uint32_t generation = 1;
  const auto* bytes = reinterpret_cast<const unsigned char*>(line.data());
  const std::size_t size = line.size();
  // An open line's end is no end of anything yet: the assertions that look past it fail there.
  const bool open_end = ending == Ending::open;

  // Adds the states `pc` reaches at position `at` to `list`; true when one is the match.
  auto add = [&](std::vector<std::uint32_t>& list, std::uint32_t pc, std::size_t at) {
    const bool word_before = at > 0 && is_word(bytes[at - 1]);
    const bool word_after = at < size && is_word(bytes[at]);
    stack.push_back(pc);
    while (!stack.empty()) {
      const std::uint32_t s = stack.back();
      stack.pop_back();
      if (seen[s] == generation) continue;
      seen[s] = generation;
      const Inst& inst = program_[s];
      switch (inst.op) {
        case Op::byte: list.push_back(s); break;
        case Op::match: stack.clear(); return true;
        case Op::jump: stack.push_back(inst.x); break;
        case Op::split:
          stack.push_back(inst.y);
          stack.push_back(inst.x);
          break;
        case Op::line_start: if (at == 0) stack.push_back(s + 1); break;
        case Op::line_end: if (at == size && !open_end) stack.push_back(s + 1); break;
        case Op::word_edge:
          if (word_before != word_after && !(open_end && at == size)) stack.push_back(s + 1);
          break;
        case Op::not_word_edge:
          if (word_before == word_after && !(open_end && at == size)) stack.push_back(s + 1);
          break;
      }
    }
    return false;
  };

  if (add(now, 0, 0)) return true;
  for (std::size_t at = 0; at < size; ++at) {
    const unsigned char c = bytes[at];
    stepped += now.size() + 1;
    ++generation;
    next.clear();
    for (const std::uint32_t s : now) {
      if (sets_[program_[s].x][c] && add(next, s + 1, at + 1)) return true;
    }
    if (add(next, 0, at + 1)) return true;
    now.swap(next);
  }
  return false;
}

}  // namespace dshpty::text
