// Key names, as a model writes them (tmux's vocabulary): "Enter", "Up", "C-c", "M-x",
// "S-Tab", "F5", "PageDown", aliases "Esc", "ArrowUp", "Backspace", and a single
// character for itself ("y", ":"). Parsed before anything is written, so an unknown name
// fails the send whole; the Emulator turns parsed keys into bytes in the terminal's modes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dshpty/result.hpp"

namespace dshpty::screen {

struct Key {
  enum class Kind { character, named };
  enum class Name {
    enter, escape, tab, backspace, up, down, left, right, home, end, page_up, page_down,
    insert, del, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12
  };
  Kind kind = Kind::character;
  char32_t character = 0;  // Kind::character: a Unicode scalar value (Space is ' ')
  Name name = Name::enter;  // Kind::named
  bool ctrl = false;
  bool alt = false;    // M-
  bool shift = false;  // S- (BTab is S-Tab)
  friend bool operator==(const Key&, const Key&) = default;
};

// INVALID_ARGUMENT naming the first unknown name (and saying where the vocabulary is);
// also for an empty list entry.
Result<std::vector<Key>> parse_keys(const std::vector<std::string>& names);

}  // namespace dshpty::screen
