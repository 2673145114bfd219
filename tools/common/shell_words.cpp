#include "shell_words.hpp"

namespace dshpty::tool {

namespace {
bool blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }
}  // namespace

Result<std::vector<std::string>> split_shell_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  // A word exists once any character or quote of it is seen: '' is an empty word.
  bool in_word = false;
  std::size_t i = 0;
  const auto unterminated = [&](const char* what, std::size_t at) {
    return make_error(Code::INVALID_ARGUMENT,
                      std::string("unterminated ") + what + " at character " + std::to_string(at + 1) + " of \"" +
                          std::string(text) + "\"");
  };
  while (i < text.size()) {
    const char c = text[i];
    if (blank(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
    } else if (c == '\'') {
      const auto close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return unterminated("single quote", i);
      word.append(text.substr(i + 1, close - i - 1));
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      const std::size_t open = i++;
      for (;;) {
        if (i >= text.size()) return unterminated("double quote", open);
        const char d = text[i];
        if (d == '"') break;
        if (d == '\\' && i + 1 < text.size()) {
          const char e = text[i + 1];
          if (e == '\n') {
            i += 2;
            continue;
          }
          if (e == '\\' || e == '"' || e == '$' || e == '`') {
            word += e;
            i += 2;
            continue;
          }
        }
        word += d;
        ++i;
      }
      in_word = true;
      ++i;
    } else if (c == '\\') {
      if (i + 1 >= text.size())
        return make_error(Code::INVALID_ARGUMENT, "a backslash ends \"" + std::string(text) + "\": nothing to escape");
      if (text[i + 1] != '\n') {
        word += text[i + 1];
        in_word = true;
      }
      i += 2;
    } else {
      word += c;
      in_word = true;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace dshpty::tool
