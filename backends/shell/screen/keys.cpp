// Key names to keys: tmux's vocabulary (its key-string.c), with the aliases models write.
#include "screen/keys.hpp"

#include <array>
#include <cctype>
#include <optional>
#include <string_view>

#include "text/utf8.hpp"

namespace dshpty::screen {
namespace {

struct NamedKey {
  std::string_view name;
  Key::Name key;
  bool shift = false;  // BTab is Tab with Shift
};

// Compared without regard to case ("enter", "ENTER", "PageDown" all work).
constexpr std::array kNamedKeys = {
    NamedKey{"Enter", Key::Name::enter},        NamedKey{"Return", Key::Name::enter},
    NamedKey{"Escape", Key::Name::escape},      NamedKey{"Esc", Key::Name::escape},
    NamedKey{"Tab", Key::Name::tab},            NamedKey{"BTab", Key::Name::tab, true},
    NamedKey{"BSpace", Key::Name::backspace},   NamedKey{"Backspace", Key::Name::backspace},
    NamedKey{"Up", Key::Name::up},              NamedKey{"ArrowUp", Key::Name::up},
    NamedKey{"Down", Key::Name::down},          NamedKey{"ArrowDown", Key::Name::down},
    NamedKey{"Left", Key::Name::left},          NamedKey{"ArrowLeft", Key::Name::left},
    NamedKey{"Right", Key::Name::right},        NamedKey{"ArrowRight", Key::Name::right},
    NamedKey{"Home", Key::Name::home},          NamedKey{"End", Key::Name::end},
    NamedKey{"PageUp", Key::Name::page_up},     NamedKey{"PPage", Key::Name::page_up},
    NamedKey{"PgUp", Key::Name::page_up},       NamedKey{"PageDown", Key::Name::page_down},
    NamedKey{"NPage", Key::Name::page_down},    NamedKey{"PgDn", Key::Name::page_down},
    NamedKey{"Insert", Key::Name::insert},      NamedKey{"IC", Key::Name::insert},
    NamedKey{"Delete", Key::Name::del},         NamedKey{"DC", Key::Name::del},
    NamedKey{"F1", Key::Name::f1},              NamedKey{"F2", Key::Name::f2},
    NamedKey{"F3", Key::Name::f3},              NamedKey{"F4", Key::Name::f4},
    NamedKey{"F5", Key::Name::f5},              NamedKey{"F6", Key::Name::f6},
    NamedKey{"F7", Key::Name::f7},              NamedKey{"F8", Key::Name::f8},
    NamedKey{"F9", Key::Name::f9},              NamedKey{"F10", Key::Name::f10},
    NamedKey{"F11", Key::Name::f11},            NamedKey{"F12", Key::Name::f12},
};

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// The key one name stands for, modifiers already stripped; nullopt when unknown.
std::optional<Key> base_key(std::string_view name) {
  for (const NamedKey& named : kNamedKeys) {
    if (!equal_ignoring_case(name, named.name)) continue;
    Key key{.kind = Key::Kind::named, .name = named.key};
    key.shift = named.shift;
    return key;
  }
  if (equal_ignoring_case(name, "Space")) return Key{.character = U' '};
  // One character, in UTF-8, stands for itself.
  utf8::DecodedChar decoded = utf8::decode(name);
  if (decoded.state == utf8::DecodedChar::State::complete && decoded.length == name.size() &&
      !(decoded.code_point == 0xFFFD && name != "\xEF\xBF\xBD") && decoded.code_point >= 0x20 &&
      decoded.code_point != 0x7F) {
    return Key{.character = decoded.code_point};
  }
  return std::nullopt;
}

Error unknown(std::string_view name) {
  return make_error(Code::INVALID_ARGUMENT,
                    "unknown key \"" + std::string(name) +
                        "\": use a name (Enter Escape Tab BTab BSpace Space Up Down Left Right Home End "
                        "PageUp PageDown Insert Delete F1..F12), a single character, or either with "
                        "C-, M-, S- prefixes (C-c, M-x, S-Tab)");
}

}  // namespace

Result<std::vector<Key>> parse_keys(const std::vector<std::string>& names) {
  std::vector<Key> keys;
  keys.reserve(names.size());
  for (const std::string& whole : names) {
    if (whole.empty()) return make_error(Code::INVALID_ARGUMENT, "empty key name in keys");
    std::string_view rest = whole;
    bool ctrl = false, alt = false, shift = false;
    // "C-M-x": prefixes while something follows them ("C-" alone is not a prefix: "-" after C).
    while (rest.size() > 2 && rest[1] == '-') {
      char prefix = rest[0];
      if (prefix == 'C' || prefix == 'c') ctrl = true;
      else if (prefix == 'M' || prefix == 'm') alt = true;
      else if (prefix == 'S' || prefix == 's') shift = true;
      else break;
      rest.remove_prefix(2);
    }
    std::optional<Key> key = base_key(rest);
    if (!key) return unknown(whole);
    key->ctrl = ctrl;
    key->alt = alt;
    key->shift = key->shift || shift;
    if (key->kind == Key::Kind::character && ctrl) {
      // C- with a character is a control byte: only where one exists.
      char32_t c = key->character;
      bool has_control = c == U' ' || c == U'?' || (c >= U'@' && c <= U'_') || (c >= U'a' && c <= U'z');
      if (!has_control) return unknown(whole);
    }
    keys.push_back(*key);
  }
  return keys;
}

}  // namespace dshpty::screen
