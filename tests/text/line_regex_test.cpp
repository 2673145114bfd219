// LineRegex (backends/shell/text/line_regex.hpp): the same yes/no as std::regex on the
// ECMAScript subset it takes (thousands of random patterns and lines from a seeded
// generator), linear time on the patterns that make a backtracker exponential (each just
// has to return, with the right answer: no clock), and the refusals that name what a
// linear engine cannot do.
#include <doctest/doctest.h>

#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "text/line_regex.hpp"

using dshpty::Code;
using dshpty::text::LineRegex;

namespace {

bool search(std::string_view pattern, std::string_view line) {
  auto regex = LineRegex::compile(pattern);
  REQUIRE_MESSAGE(regex.ok(), pattern << ": " << (regex.ok() ? "" : regex.error()->message));
  return regex->search(line);
}

std::string refusal(std::string_view pattern) {
  auto regex = LineRegex::compile(pattern);
  if (regex.ok()) return "(compiled)";
  CHECK(regex.error()->code == Code::INVALID_ARGUMENT);
  return regex.error()->message;
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// Random patterns over the subset, small enough that std::regex answers quickly.
class PatternMaker {
 public:
  explicit PatternMaker(std::uint32_t seed) : rng_(seed) {}

  std::string pattern() { return disjunction(0); }

  std::string line() {
    static constexpr std::string_view kAlphabet = "ab1 -._A";
    std::string s(pick(13), ' ');
    for (char& c : s) c = kAlphabet[pick(kAlphabet.size())];
    return s;
  }

 private:
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }

  std::string disjunction(int depth) {
    std::string s = alternative(depth);
    while (pick(5) == 0) s += "|" + alternative(depth);
    return s;
  }

  std::string alternative(int depth) {
    std::string s;
    for (std::size_t n = pick(4); n > 0; --n) s += term(depth);
    return s;
  }

  std::string term(int depth) {
    static const std::vector<std::string> kAssertions = {"^", "$", "\\b", "\\B"};
    static const std::vector<std::string> kAtoms = {
        "a", "b", "1", " ", "A", "\\.", "\\-", "-", ".", "_", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S",
        "[ab]", "[^a]", "[a-c]", "[\\d ]", "[^\\w]", "[-a]", "[a-]", "[\\s1]", "[.]", "[^-_]",
        "\\x61", "\\u0062", "\\/", "[A-Z]", "[\\x2d]"};
    static const std::vector<std::string> kQuantifiers = {"*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}", "{0}"};
    if (pick(8) == 0) return kAssertions[pick(kAssertions.size())];
    std::string atom;
    if (depth < 3 && pick(4) == 0) {
      atom = (pick(2) ? "(" : "(?:") + disjunction(depth + 1) + ")";
    } else {
      atom = kAtoms[pick(kAtoms.size())];
    }
    if (pick(3) == 0) {
      atom += kQuantifiers[pick(kQuantifiers.size())];
      if (pick(4) == 0) atom += "?";
    }
    return atom;
  }

  std::mt19937 rng_;
};

}  // namespace

TEST_CASE("line regex: the same answer as std::regex on thousands of random patterns") {
  PatternMaker maker(20261207);
  int compared = 0, matched = 0;
  for (int n = 0; n < 4000; ++n) {
    const std::string pattern = maker.pattern();
    std::regex reference(pattern, std::regex::ECMAScript);
    auto regex = LineRegex::compile(pattern);
    REQUIRE_MESSAGE(regex.ok(), pattern << ": " << (regex.ok() ? "" : regex.error()->message));
    for (int k = 0; k < 8; ++k) {
      const std::string line = maker.line();
      const bool expected = std::regex_search(line, reference);
      INFO("pattern /" << pattern << "/ line \"" << line << "\"");
      CHECK(regex->search(line) == expected);
      ++compared;
      matched += expected;
    }
  }
  // The generator must make both answers common, or the comparison proves little.
  CHECK(matched > compared / 5);
  CHECK(matched < compared * 4 / 5);
}

TEST_CASE("line regex: a table of patterns and lines") {
  struct Row {
    std::string_view pattern, line;
    bool match;
  };
  const Row rows[] = {
      {"ready", "server ready in 300 ms", true},
      {"^ready", "server ready", false},
      {"ready$", "ready!", false},
      {"^$", "", true},
      {"listening on port (\\d+)", "listening on port 5173", true},
      {"\\bport\\b", "import x", false},
      {"\\Bport", "import x", true},
      {"[Ee]rror|FAIL(ED)?", "3 tests FAILED", true},
      {"(?:ab){2,}c", "xababc", true},
      {"(?:ab){2,}c", "xabc", false},
      {"a{3}", "aa", false},
      {"a{0}b", "b", true},
      {"x{2,3}?y", "xxxy", true},
      {"\\x41\\u0042", "AB", true},
      {"caf\\u00e9", "caf\xC3\xA9", true},  // \u is the character's UTF-8, not a byte
      {"\\u2192", "a \xE2\x86\x92 b", true},
      {"[\\]]", "]", true},
      {"[^]", "x", true},
      {"[]", "x", false},
      {"a{", "a{", true},     // a '{' that starts no quantifier is a literal
      {"a{,2}", "a{,2}", true},
      {"}]", "}]", true},
      {"\\cJ", "x", false},
      {"\\$\\{HOME\\}", "echo ${HOME}", true},
      {"(a|)+b", "b", true},
      {"(|a)*$", "aaa", true},
      {"(?:\\b)*x", "x", true},
      {"[\\b]", "\b", true},
      {"\\0", std::string_view("a\0b", 3), true},
      {"a\\sb", "a\fb", true},  // \s is isspace(): \t \n \v \f \r and ' '
      {"a\\sb", "a\vb", true},
      {"a\\Sb", "a\rb", false},
      {".", "\r", false},
  };
  for (const Row& row : rows) {
    INFO("pattern /" << row.pattern << "/ line \"" << row.line << "\"");
    CHECK(search(row.pattern, row.line) == row.match);
  }
}

TEST_CASE("line regex: at an open line's end (it may go on) $, \\b and \\B never hold") {
  struct Row {
    std::string_view pattern, line;
    bool ended, open;
  };
  const Row rows[] = {
      {"^REA$", "REA", true, false},
      {"REA$|x", "REA", true, false},
      {"REA$|^R", "REA", true, true},  // another alternative holds
      {"^REA", "REA", true, true},
      {"REA\\b", "REA", true, false},
      {"REA\\b", "REA DY", true, true},  // a boundary inside the line is known
      {"A\\B", "REA", false, false},
      {"\\[y/N\\] $", "Proceed? [y/N] ", true, false},
      {"\\[y/N\\] ", "Proceed? [y/N] ", true, true},
      {"^$", "", true, false},
      {"^", "", true, true},
  };
  for (const auto& row : rows) {
    auto regex = LineRegex::compile(row.pattern);
    REQUIRE(regex.ok());
    INFO(row.pattern << " on " << row.line);
    CHECK(regex->search(row.line) == row.ended);
    CHECK(regex->search(row.line, LineRegex::Ending::open) == row.open);
  }
}

TEST_CASE("line regex: patterns that make a backtracker exponential return, with the right answer") {
  std::string words;
  for (int i = 0; i < 40; ++i) words += (i ? " " : "") + std::string("word");
  std::string as(1024, 'a');
  std::string commas(1000, ',');
  CHECK_FALSE(search("(\\w+\\s?)+$", words + "!"));
  CHECK(search("(\\w+\\s?)+$", words));
  CHECK_FALSE(search("(a*)*b", as));
  CHECK(search("(a*)*b", as + "b"));
  CHECK_FALSE(search("(a|a)*b", as));
  CHECK_FALSE(search("(a|aa)+c", as));
  CHECK_FALSE(search("((a+)+)+b", as));
  CHECK_FALSE(search("(.*,)*x", commas));
  CHECK_FALSE(search("(\\s*\\w+)*:", words));
  CHECK_FALSE(search("(x+x+)+y", std::string(1024, 'x')));
  // a?^n a^n against a^n: the classic (2^n paths for a backtracker).
  CHECK(search("(?:a?){30}a{30}", std::string(30, 'a')));
  CHECK_FALSE(search("(?:a?){30}a{30}", std::string(29, 'a')));
  CHECK_FALSE(search("(a|b|c|d|e|f|ab|bc|cd|de|ef)*z", std::string(1024, 'a')));
  CHECK_FALSE(search(".*.*.*.*.*.*.*.*=", std::string(1024, 'q')));
  // The largest program takes any line: bounded by the line times the program.
  CHECK_FALSE(search("(?:a?){300}(?:a){300}b", as));
  CHECK(search("(?:a?){300}(?:a){300}", as));
}

TEST_CASE("line regex: what a linear engine cannot do is refused by name") {
  CHECK(contains(refusal("(a)\\1"), "backreferences are not supported"));
  CHECK(contains(refusal("\\k<x>"), "backreferences are not supported"));
  CHECK(contains(refusal("foo(?=bar)"), "lookahead is not supported"));
  CHECK(contains(refusal("foo(?!bar)"), "lookahead is not supported"));
  CHECK(contains(refusal("(?<=a)b"), "lookbehind is not supported"));
  CHECK(contains(refusal("(?<!a)b"), "lookbehind is not supported"));
  CHECK(contains(refusal("(?<port>\\d+)"), "named groups are not supported"));
  CHECK(contains(refusal("(?i)ready"), "inline flags"));
  CHECK(contains(refusal("\\p{L}"), "unknown escape \\p"));
  CHECK(contains(refusal("\\u{41}"), "\\u{...}"));
  CHECK(contains(refusal("\\x4"), "hex digits"));
  // Malformed patterns, as std::regex refused them.
  CHECK(contains(refusal("(unclosed"), "is not closed"));
  CHECK(contains(refusal("a)"), "unmatched ')'"));
  CHECK(contains(refusal("a["), "is not closed"));
  CHECK(contains(refusal("*a"), "nothing to repeat"));
  CHECK(contains(refusal("a**"), "nothing to repeat"));
  CHECK(contains(refusal("^*"), "nothing to repeat"));
  CHECK(contains(refusal("a{3,2}"), "n < m"));
  CHECK(contains(refusal("[z-a]"), "out of order"));
  CHECK(contains(refusal("[\\d-z]"), "a range in a class"));
  CHECK(contains(refusal("a\\"), "cannot end with"));
}

TEST_CASE("line regex: a class holds only ASCII, so [✓✗] never matches an em dash") {
  // A class matches one byte: a multi-byte character in it would be its bytes, each.
  for (const char* p : {"status: [\u2713\u2717]", "status: [ââ]", "[Ã©]", "[\u00e9]",
                        "[a-\u00ff]", "[\xe9]", "[^Ã©]"}) {
    CAPTURE(p);
    CHECK(contains(refusal(p), "a class holds only ASCII characters"));
    CHECK(contains(refusal(p), "(?:"));
  }
  // What to write instead, and ASCII classes beside UTF-8 text, still work.
  CHECK(search("status: (?:â|â)", "status: â done"));
  CHECK_FALSE(search("status: (?:â|â)", "status: â pending"));
  CHECK(search("cafÃ© [0-9]", "cafÃ© 7"));
  CHECK(search("[\x7f]", "\x7f"));
}

TEST_CASE("line regex: a quantifier after a multi-byte character repeats the character") {
  // It repeated the character's last byte: ^é{2}$ never matched éé (adversary round 5).
  CHECK(search("^\u00e9{2}$", "\u00e9\u00e9"));
  CHECK_FALSE(search("^\u00e9{2}$", "\u00e9\xa9"));
  CHECK(search("^\u2713+ done$", "\u2713\u2713\u2713 done"));
  CHECK(search("^caf\u00e9?$", "caf"));
  CHECK_FALSE(search("^caf\u00e9?$", "caf\xc3"));
  CHECK(search("^\U0001F600*x$", "\U0001F600\U0001F600x"));
}

TEST_CASE("line regex: compile is bounded: counts, expansion, length, nesting") {
  CHECK(contains(refusal("a{1001}"), "a repeat count over 1000"));
  CHECK(contains(refusal("a{99999999999999999999}"), "a repeat count over 1000"));
  CHECK(contains(refusal("(a{1000}){1000}"), "too large"));
  CHECK(contains(refusal("((((a{10}){10}){10}){10}){10}"), "too large"));
  CHECK(contains(refusal("(?:a|b|c|d){1000}x{1000}y{1000}"), "too large"));
  CHECK(contains(refusal(std::string(LineRegex::kMaxPatternBytes + 1, 'a')), "longer than"));
  CHECK(contains(refusal(std::string(300, '(') + "a" + std::string(300, ')')), "nested"));
  CHECK(LineRegex::compile(std::string(150, '(') + "a" + std::string(150, ')')).ok());
  CHECK(contains(refusal("(?:[a-z]{1000}){2}"), "too large"));
  auto biggest = LineRegex::compile("[a-z]{1000}");
  REQUIRE(biggest.ok());
  CHECK(biggest->program_size() <= LineRegex::kMaxProgram + 1);
}
