#include "trace.hpp"

#include <cctype>
#include <charconv>
#include <cstdio>

#include "faults.hpp"

namespace dshpty::fuzz {

std::string_view op_kind_name(OpKind kind) noexcept {
  switch (kind) {
#define DSHPTY_FUZZ_OP_NAME_(name) \
  case OpKind::name:               \
    return #name;
    DSHPTY_FUZZ_OPS(DSHPTY_FUZZ_OP_NAME_)
#undef DSHPTY_FUZZ_OP_NAME_
  }
  return "?";
}

unsigned resize_dimension(std::uint8_t v) noexcept {
  switch (v) {
    case 0: return 0;
    case 253: return 4096;
    case 254: return 4097;
    case 255: return 5000;
    default: return v;
  }
}

std::optional<OpKind> parse_op_kind(std::string_view name) noexcept {
  for (int k = 0; k < op_kind_count; ++k)
    if (op_kind_name(static_cast<OpKind>(k)) == name) return static_cast<OpKind>(k);
  return std::nullopt;
}

namespace {

std::string owner_ref(std::uint8_t a) {
  return a == session_owner ? "its owner" : "owner " + std::to_string(a);
}
std::string session_ref(std::uint8_t b) {
  if (b == unknown_session) return "session <unknown>";
  return b < 128 ? "live session #" + std::to_string(b) : "any session #" + std::to_string(b - 128);
}
const char* type_slot(std::uint8_t b, bool registering) {
  switch (b % 3) {
    case 0: return "alpha";
    case 1: return "beta";
    default: return registering ? "\"\"" : "gamma";
  }
}

}  // namespace

std::string describe(const Op& op) {
  std::string out(op_kind_name(op.kind));
  switch (op.kind) {
    case OpKind::register_backend:
      out += std::string(" ") + type_slot(op.a, true) +
             (op.b == 0 ? " (new instance)" : " (instance " + std::to_string(op.b - 1) + ")");
      break;
    case OpKind::unregister_backend:
      out += " registration " + std::to_string(op.a);
      break;
    case OpKind::mint_owner:
      break;
    case OpKind::dispose_owner:
      out += " " + owner_ref(op.a) + " [closes from " + std::to_string(op.f) + "]";
      break;
    case OpKind::spawn: {
      out += " " + owner_ref(op.a) + " " + type_slot(op.b, false);
      const int name = op.c % 8;
      out += name < 3 ? " no name" : name == 3 ? " name \"\"" : " name n" + std::to_string(name - 4);
      const int signal = op.d % 4;
      out += signal < 2 ? "" : signal == 2 ? " signal=controller" : " signal=aborted";
      out += " [" + describe_spawn(op.f) + "]";
      break;
    }
    case OpKind::abort_spawn:
      out += " caller " + std::to_string(op.a);
      break;
    case OpKind::start_send:
      out += " " + owner_ref(op.a) + " " + session_ref(op.b) + " [" + describe_send(op.f) + "]";
      break;
    case OpKind::cancel:
    case OpKind::read_output:
      out += " send " + std::to_string(op.a);
      break;
    case OpKind::read:
      out += " " + owner_ref(op.a) + " " + session_ref(op.b) + (op.c & 1 ? " invalid request" : "");
      break;
    case OpKind::signal:
      out += " " + owner_ref(op.a) + " " + session_ref(op.b) + " " +
             std::string(signal_name(static_cast<Signal>(op.c % 5))) + " [" + describe_signal(op.f) + "]";
      break;
    case OpKind::kill:
      out += " " + owner_ref(op.a) + " " + session_ref(op.b) + (op.c & 1 ? " reason \"fuzz reason\"" : "") +
             " [close " + describe_step(static_cast<std::uint8_t>(op.f), StepUse::close) + "]";
      break;
    case OpKind::list:
      out += " " + owner_ref(op.a);
      break;
    case OpKind::release_gate:
      out += " g" + std::to_string(op.a % gate_slots) + (op.b & 1 ? " fail" : " open");
      break;
    case OpKind::turn:
      out += std::string(op.a & 1 ? " ONCE" : " NOWAIT") + " x" + std::to_string(1 + op.b % 4);
      break;
    case OpKind::dispose:
      out += " [closes from " + std::to_string(op.f) + "]";
      break;
    case OpKind::resize:
      out += " " + owner_ref(op.a) + " " + session_ref(op.b) + " " + std::to_string(resize_dimension(op.c)) +
             "x" + std::to_string(resize_dimension(op.d)) + " [" + describe_resize(op.f) + "]";
      break;
    case OpKind::screen:
      out += " " + owner_ref(op.a) + " " + session_ref(op.b) + " [" + describe_screen(op.f) + "]";
      break;
  }
  if (op.nested) out += " (inside the next completion)";
  return out;
}

std::string to_cpp(const Trace& trace) {
  std::string out;
  char line[160];
  for (const Op& op : trace) {
    std::snprintf(line, sizeof line, "    {OpKind::%s, %u, %u, %u, %u, 0x%08x, %s},",
                  std::string(op_kind_name(op.kind)).c_str(), op.a, op.b, op.c, op.d, op.f,
                  op.nested ? "true" : "false");
    out += line;
    out += "  // " + describe(op) + "\n";
  }
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<std::uint32_t> number(std::string_view s) {
  s = trim(s);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  std::uint32_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<Trace> parse_trace(std::string_view text) {
  Trace trace;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (auto comment = line.find("//"); comment != std::string_view::npos) line = line.substr(0, comment);
    for (std::size_t at = line.find("{OpKind::"); at != std::string_view::npos;
         at = line.find("{OpKind::", at + 1)) {
      std::size_t close = line.find('}', at);
      if (close == std::string_view::npos) return std::nullopt;
      std::string_view body = line.substr(at + 9, close - at - 9);
      std::vector<std::string_view> fields;
      for (std::size_t start = 0;;) {
        std::size_t comma = body.find(',', start);
        fields.push_back(trim(body.substr(start, comma == std::string_view::npos ? comma : comma - start)));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
      if (fields.size() != 7) return std::nullopt;
      auto kind = parse_op_kind(fields[0]);
      if (!kind) return std::nullopt;
      Op op;
      op.kind = *kind;
      std::uint8_t* small[] = {&op.a, &op.b, &op.c, &op.d};
      for (int i = 0; i < 4; ++i) {
        auto v = number(fields[static_cast<std::size_t>(i) + 1]);
        if (!v || *v > 255) return std::nullopt;
        *small[i] = static_cast<std::uint8_t>(*v);
      }
      auto f = number(fields[5]);
      if (!f) return std::nullopt;
      op.f = *f;
      if (fields[6] == "true") op.nested = true;
      else if (fields[6] != "false") return std::nullopt;
      trace.push_back(op);
    }
  }
  return trace;
}

}  // namespace dshpty::fuzz
