// LineRegex: "does this line contain a match of this pattern?", in time linear in the line.
// A send's `until.output` is a pattern an agent wrote, run on the host's one loop against
// every line of output: a backtracking engine (std::regex) takes exponential time on
// nested quantifiers (`(\w+\s?)+$` against a line of 30 words, `(a*)*b` against 30 a's)
// and would freeze every session of every owner. So the pattern is compiled to a program
// for a Pike VM (a Thompson NFA run on all its states at once): a search costs
// O(line bytes x program size), the program is bounded (kMaxProgram), and so is compile.
//
// The dialect: the ECMAScript subset that a linear engine can run, byte-wise like
// std::regex over char (docs/shell-backend.md, "Output conditions"):
//   literals; `.` (any byte but '\n' and '\r'); classes `[...]` `[^...]` with ranges and
//   escapes; escapes \d \D \w \W \s \S \b \B \t \n \v \f \r \0 \xHH \uHHHH (a character's
//   UTF-8 bytes) \cX and any punctuation escaped (\. \/ \- ...); anchors ^ $ (the line's
//   start and end); groups (...) (?:...); alternation |; quantifiers * + ? {m} {m,} {m,n}
//   and their lazy forms (the same thing for a yes/no answer). A '{' that starts no
//   quantifier, a lone ']' or '}' are literals.
// Refused (INVALID_ARGUMENT naming the construct): backreferences (\1, \k<name>),
// lookahead, lookbehind, named groups, inline flags, unknown letter escapes; and patterns
// longer than kMaxPatternBytes, counts over kMaxRepeat, programs over kMaxProgram.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"

namespace dshpty::text {

class LineRegex {
 public:
  static constexpr std::size_t kMaxPatternBytes = 1024;
  static constexpr std::uint32_t kMaxRepeat = 1000;
  // Instructions: a search costs at most line bytes x this many steps, about 7 ns each
  // (a 1 KiB line against the largest program: about 10 ms).
  static constexpr std::size_t kMaxProgram = 1024;

  // The error's message says what was refused, without a prefix (the caller names its field).
  static Result<LineRegex> compile(std::string_view pattern);

  // How `line` ends: `ended` by its line break, or `open`: it may go on (an unended last
  // line, the head of an overlong one). `$` means a line's real end, and what follows an
  // open line is not known yet, so `$`, `\b` and `\B` never hold at an open line's end:
  // `^READY$` does not match the "REA" of a line still being written.
  enum class Ending : std::uint8_t { ended, open };
  // Whether some substring of `line` matches. `steps`, when given, grows by the work done:
  // the states stepped, one per byte at least (a line costs at most its bytes x the
  // program's size).
  bool search(std::string_view line, Ending ending = Ending::ended, std::uint64_t* steps = nullptr) const;

  std::size_t program_size() const noexcept { return program_.size(); }

  enum class Op : std::uint8_t { byte, split, jump, line_start, line_end, word_edge, not_word_edge, match };
  struct Inst {
    Op op = Op::match;
    std::uint32_t x = 0;  // byte: the index of its set; split, jump: a target
    std::uint32_t y = 0;  // split: the other target
  };

 private:
  friend class LineRegexCompiler;
  bool run(std::string_view line, Ending ending, std::uint64_t& stepped) const;
  std::vector<Inst> program_;
  std::vector<std::bitset<256>> sets_;
};

}  // namespace dshpty::text
