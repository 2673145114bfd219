#include "generate.hpp"

namespace dshpty::fuzz {

namespace {

// splitmix64: tiny, good enough, and identical everywhere.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(next() % n); }
  std::uint8_t byte() { return static_cast<std::uint8_t>(next()); }
};

Trace prologue() {
  return {
      {OpKind::mint_owner, 0, 0, 0, 0, 0, false},
      {OpKind::mint_owner, 0, 0, 0, 0, 0, false},
      {OpKind::register_backend, 0, 0, 0, 0, 0, false},
  };
}

// Relative weights of each kind, in OpKind order: turns and spawns dominate, dispose is rare
// (the epilogue disposes every run anyway).
constexpr std::uint32_t weights[op_kind_count] = {
    2,   // register_backend
    2,   // unregister_backend
    3,   // mint_owner
    2,   // dispose_owner
    16,  // spawn
    4,   // abort_spawn
    9,   // start_send
    3,   // cancel
    2,   // read_output
    3,   // read
    4,   // signal
    9,   // kill
    1,   // list
    7,   // release_gate
    22,  // turn
    1,   // dispose
    3,   // resize
    3,   // screen
};

OpKind pick_kind(Rng& rng) {
  std::uint32_t total = 0;
  for (std::uint32_t w : weights) total += w;
  std::uint32_t x = rng.below(total);
  for (int k = 0; k < op_kind_count; ++k) {
    if (x < weights[k]) return static_cast<OpKind>(k);
    x -= weights[k];
  }
  return OpKind::turn;
}

std::uint8_t owner_ref(Rng& rng) {
  // Mostly minted owners (2..), now and then no owner or a foreign one.
  if (rng.below(20) == 0) return static_cast<std::uint8_t>(rng.below(2));
  return static_cast<std::uint8_t>(2 + rng.below(8));
}

std::uint8_t session_ref(Rng& rng) {
  // Mostly the newest few sessions (the live ones), sometimes any, rarely an unknown id.
  if (rng.below(30) == 0) return unknown_session;
  if (rng.below(5) != 0) return static_cast<std::uint8_t>(rng.below(4));  // a live one
  return static_cast<std::uint8_t>(128 + rng.below(127));                 // any

}

// A resize dimension's byte (trace.hpp's resize_dimension): mostly a valid size, one in
// eight a bound or just past one.
std::uint8_t dimension(Rng& rng) {
  static constexpr std::uint8_t edges[] = {0, 1, 253, 254, 255};
  if (rng.below(8) == 0) return edges[rng.below(5)];
  return static_cast<std::uint8_t>(1 + rng.below(252));
}

std::uint8_t spawn_type(Rng& rng) {
  const std::uint32_t x = rng.below(20);
  return static_cast<std::uint8_t>(x < 16 ? 0 : x < 19 ? 1 : 2);  // alpha, beta, gamma
}

}  // namespace

Trace generate(std::uint64_t seed) {
  Rng rng{seed * 0x2545f4914f6cdd1dull + 1};
  Trace trace = prologue();
  const std::uint32_t length = 10 + rng.below(60);
  for (std::uint32_t i = 0; i < length; ++i) {
    Op op;
    op.kind = pick_kind(rng);
    // A dispose early would leave little to test: only in the last fifth.
    if (op.kind == OpKind::dispose && i < length * 4 / 5) op.kind = OpKind::turn;
    op.a = rng.byte();
    op.b = rng.byte();
    op.c = rng.byte();
    op.d = rng.byte();
    op.f = static_cast<std::uint32_t>(rng.next());
    switch (op.kind) {
      case OpKind::spawn:
        op.a = owner_ref(rng);
        op.b = spawn_type(rng);
        op.d = static_cast<std::uint8_t>(rng.below(10) < 7 ? 0 : rng.below(3) < 2 ? 2 : 3);
        break;
      case OpKind::dispose_owner:
      case OpKind::list:
        op.a = owner_ref(rng);
        break;
      case OpKind::start_send:
      case OpKind::read:
      case OpKind::signal:
      case OpKind::kill:
      case OpKind::screen:
        op.a = rng.below(4) != 0 ? session_owner : owner_ref(rng);
        op.b = session_ref(rng);
        break;
      case OpKind::resize:
        op.a = rng.below(4) != 0 ? session_owner : owner_ref(rng);
        op.b = session_ref(rng);
        op.c = dimension(rng);
        op.d = dimension(rng);
        break;
      case OpKind::register_backend:
        op.a = static_cast<std::uint8_t>(rng.below(8) == 0 ? 2 : rng.below(2));
        op.b = static_cast<std::uint8_t>(rng.below(3));
        break;
      default:
        break;
    }
    op.nested = op.kind != OpKind::turn && rng.below(14) == 0;
    trace.push_back(op);
  }
  return trace;
}

Trace decode_bytes(const std::uint8_t* data, std::size_t size) {
  Trace trace = prologue();
  for (std::size_t at = 0; at + 8 <= size && trace.size() < 400; at += 8) {
    const std::uint8_t* p = data + at;
    Op op;
    op.kind = static_cast<OpKind>((p[0] & 0x7f) % op_kind_count);
    op.nested = (p[0] & 0x80) && op.kind != OpKind::turn;
    op.a = p[1];
    op.b = p[2];
    op.c = p[3];
    op.d = p[4];
    op.f = static_cast<std::uint32_t>(p[5]) | static_cast<std::uint32_t>(p[6]) << 8 |
           static_cast<std::uint32_t>(p[7]) << 16;
    trace.push_back(op);
  }
  return trace;
}

}  // namespace dshpty::fuzz
