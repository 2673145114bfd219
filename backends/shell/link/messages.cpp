#include "link/messages.hpp"

#ifndef DSHPTY_VERSION
#define DSHPTY_VERSION "unknown"
#endif

namespace dshpty::frames {

std::string helper_build() { return "dshpty-supervisor " DSHPTY_VERSION; }

namespace {

// A count of strings is bounded by what a frame can hold (4 bytes an entry) before anything
// is reserved for it; a short payload then fails the reader.
constexpr std::uint32_t kMaxEntries = kMaxFrame / 4;

void strings(FrameWriter& w, const std::vector<std::string>& list) {
  w.u32(static_cast<std::uint32_t>(list.size()));
  for (const auto& s : list) w.str(s);
}
bool strings(PayloadReader& r, std::vector<std::string>& list) {
  const std::uint32_t n = r.u32();
  if (n > kMaxEntries) return false;
  for (std::uint32_t i = 0; i < n && !r.failed(); ++i) list.emplace_back(r.str());
  return !r.failed();
}

// Decodes with `read`, then insists the payload was read exactly.
template <class F, class Read>
std::optional<F> exactly(std::string_view payload, Read read) {
  PayloadReader r(payload);
  F f;
  if (!read(r, f) || !r.done()) return std::nullopt;
  return f;
}

}  // namespace

// ---- host -> helper ----------------------------------------------------------------------

void encode(std::string& out, const Hello& f) {
  FrameWriter(out).begin(Type::hello).u32(f.version).u32(f.ping_ms).u32(f.link_timeout_ms).end();
}
template <> std::optional<Hello> decode(std::string_view p) {
  return exactly<Hello>(p, [](PayloadReader& r, Hello& f) {
    f.version = r.u32(), f.ping_ms = r.u32(), f.link_timeout_ms = r.u32();
    return true;
  });
}

bool encode(std::string& out, const Open& f) {
  const std::size_t before = out.size();
  FrameWriter w(out);
  w.begin(Type::open).u16(f.rows).u16(f.cols).str(f.session_id).str(f.term).u8(f.cwd ? 1 : 0).str(f.cwd.value_or(""));
  strings(w, f.argv);
  strings(w, f.env);
  if (f.has_limits()) w.u64(f.limit_pids).u64(f.limit_memory).u64(f.limit_cpu_us);
  if (out.size() - before - 4 > kMaxFrame) {
    out.resize(before);
    return false;
  }
  w.end();
  return true;
}
template <> std::optional<Open> decode(std::string_view p) {
  return exactly<Open>(p, [](PayloadReader& r, Open& f) {
    f.rows = r.u16(), f.cols = r.u16();
    f.session_id = r.str();
    f.term = r.str();
    const bool has_cwd = r.u8() != 0;
    std::string cwd(r.str());
    if (has_cwd) f.cwd = std::move(cwd);
    if (!strings(r, f.argv) || !strings(r, f.env)) return false;
    if (!r.done() && !r.failed()) {
      f.limit_pids = r.u64(), f.limit_memory = r.u64(), f.limit_cpu_us = r.u64();
      if (!f.has_limits()) return false;  // written only with a limit
    }
    return true;
  });
}

void encode_in(std::string& out, std::string_view bytes) {
  for (std::size_t at = 0; at < bytes.size(); at += kMaxOutChunk) {
    FrameWriter(out).begin(Type::in).raw(bytes.substr(at, kMaxOutChunk)).end();
  }
}
template <> std::optional<In> decode(std::string_view p) { return In{p}; }

void encode(std::string& out, const Resize& f) { FrameWriter(out).begin(Type::resize).u16(f.rows).u16(f.cols).end(); }
template <> std::optional<Resize> decode(std::string_view p) {
  return exactly<Resize>(p, [](PayloadReader& r, Resize& f) { return f.rows = r.u16(), f.cols = r.u16(), true; });
}

void encode(std::string& out, const Signal& f) { FrameWriter(out).begin(Type::signal).i32(f.pgid).i32(f.signo).end(); }
template <> std::optional<Signal> decode(std::string_view p) {
  return exactly<Signal>(p, [](PayloadReader& r, Signal& f) { return f.pgid = r.i32(), f.signo = r.i32(), true; });
}

void encode(std::string& out, const Mark& f) { FrameWriter(out).begin(Type::mark).u8(f.mark).end(); }
template <> std::optional<Mark> decode(std::string_view p) {
  return exactly<Mark>(p, [](PayloadReader& r, Mark& f) { return f.mark = r.u8(), true; });
}

void encode(std::string& out, const Probe& f) { FrameWriter(out).begin(Type::probe).u32(f.seq).end(); }
template <> std::optional<Probe> decode(std::string_view p) {
  return exactly<Probe>(p, [](PayloadReader& r, Probe& f) { return f.seq = r.u32(), true; });
}

void encode(std::string& out, const Ack& f) { FrameWriter(out).begin(Type::ack).u64(f.offset).end(); }
template <> std::optional<Ack> decode(std::string_view p) {
  return exactly<Ack>(p, [](PayloadReader& r, Ack& f) { return f.offset = r.u64(), true; });
}

void encode(std::string& out, const Kill& f) { FrameWriter(out).begin(Type::kill).u32(f.grace_ms).end(); }
template <> std::optional<Kill> decode(std::string_view p) {
  return exactly<Kill>(p, [](PayloadReader& r, Kill& f) { return f.grace_ms = r.u32(), true; });
}

void encode(std::string& out, const Linger& f) {
  FrameWriter(out).begin(Type::linger).u32(f.seconds).u64(f.ring_bytes).str(f.state_dir).str(f.owner).str(f.name).str(f.type).end();
}
template <> std::optional<Linger> decode(std::string_view p) {
  return exactly<Linger>(p, [](PayloadReader& r, Linger& f) {
    f.seconds = r.u32(), f.ring_bytes = r.u64();
    f.state_dir = r.str(), f.owner = r.str(), f.name = r.str(), f.type = r.str();
    return true;
  });
}

void encode(std::string& out, const Attach& f) {
  FrameWriter(out).begin(Type::attach).str(f.key).str(f.token).str(f.owner).u8(f.resume ? 1 : 0).u64(f.output_from).end();
}
template <> std::optional<Attach> decode(std::string_view p) {
  return exactly<Attach>(p, [](PayloadReader& r, Attach& f) {
    f.key = r.str(), f.token = r.str(), f.owner = r.str();
    f.resume = r.u8() != 0;
    f.output_from = r.u64();
    return true;
  });
}

void encode(std::string& out, const Sending& f) { FrameWriter(out).begin(Type::sending).u8(f.live ? 1 : 0).end(); }
template <> std::optional<Sending> decode(std::string_view p) {
  return exactly<Sending>(p, [](PayloadReader& r, Sending& f) { return f.live = r.u8() != 0, true; });
}

void encode(std::string& out, const TakeBack& f) { FrameWriter(out).begin(Type::take_back).u32(f.own).end(); }
template <> std::optional<TakeBack> decode(std::string_view p) {
  return exactly<TakeBack>(p, [](PayloadReader& r, TakeBack& f) { return f.own = r.u32(), true; });
}

void encode(std::string& out, const Shown& f) { FrameWriter(out).begin(Type::shown).u64(f.offset).end(); }
template <> std::optional<Shown> decode(std::string_view p) {
  return exactly<Shown>(p, [](PayloadReader& r, Shown& f) { return f.offset = r.u64(), true; });
}

// ---- helper -> host ----------------------------------------------------------------------

void encode(std::string& out, const Welcome& f) {
  FrameWriter(out).begin(Type::welcome).u32(f.version).u32(f.capabilities).str(f.build).end();
}
template <> std::optional<Welcome> decode(std::string_view p) {
  return exactly<Welcome>(p, [](PayloadReader& r, Welcome& f) {
    f.version = r.u32(), f.capabilities = r.u32();
    f.build = r.str();
    return true;
  });
}

void encode(std::string& out, const Started& f) { FrameWriter(out).begin(Type::started).i32(f.pid).end(); }
template <> std::optional<Started> decode(std::string_view p) {
  return exactly<Started>(p, [](PayloadReader& r, Started& f) { return f.pid = r.i32(), true; });
}

void encode(std::string& out, const StartFailed& f) { FrameWriter(out).begin(Type::start_failed).str(f.what).end(); }
template <> std::optional<StartFailed> decode(std::string_view p) {
  return exactly<StartFailed>(p, [](PayloadReader& r, StartFailed& f) { return f.what = r.str(), true; });
}

std::uint64_t encode_out(std::string& out, std::uint64_t offset, std::string_view bytes) {
  while (!bytes.empty()) {
    const std::string_view chunk = bytes.substr(0, kMaxOutChunk);
    FrameWriter(out).begin(Type::out).u64(offset).raw(chunk).end();
    offset += chunk.size();
    bytes.remove_prefix(chunk.size());
  }
  return offset;
}
template <> std::optional<Out> decode(std::string_view p) {
  PayloadReader r(p);
  Out f;
  f.offset = r.u64();
  if (r.failed()) return std::nullopt;
  f.bytes = r.rest();
  return f;
}

void encode(std::string& out, const State& f) { FrameWriter(out).begin(Type::state).u32(f.seq).u64(f.offset).facts(f.facts).end(); }
template <> std::optional<State> decode(std::string_view p) {
  return exactly<State>(p, [](PayloadReader& r, State& f) {
    f.seq = r.u32(), f.offset = r.u64();
    f.facts = r.facts();
    return true;
  });
}

void encode(std::string& out, const Written& f) { FrameWriter(out).begin(Type::written).u64(f.bytes).end(); }
template <> std::optional<Written> decode(std::string_view p) {
  return exactly<Written>(p, [](PayloadReader& r, Written& f) { return f.bytes = r.u64(), true; });
}

void encode(std::string& out, const Exited& f) { FrameWriter(out).begin(Type::exited).u8(f.by_signal ? 1 : 0).i32(f.value).end(); }
template <> std::optional<Exited> decode(std::string_view p) {
  return exactly<Exited>(p, [](PayloadReader& r, Exited& f) { return f.by_signal = r.u8() != 0, f.value = r.i32(), true; });
}

void encode(std::string& out, const Taken& f) { FrameWriter(out).begin(Type::taken).u32(f.own).u32(f.taken).end(); }
template <> std::optional<Taken> decode(std::string_view p) {
  return exactly<Taken>(p, [](PayloadReader& r, Taken& f) { return f.own = r.u32(), f.taken = r.u32(), true; });
}

void encode(std::string& out, const LimitHitFrame& f) { FrameWriter(out).begin(Type::limit_hit).u8(f.kind).end(); }
template <> std::optional<LimitHitFrame> decode(std::string_view p) {
  return exactly<LimitHitFrame>(p, [](PayloadReader& r, LimitHitFrame& f) {
    f.kind = r.u8();
    return f.kind == 1 || f.kind == 2;
  });
}

void encode(std::string& out, const Lingering& f) { FrameWriter(out).begin(Type::lingering).str(f.key).str(f.token).end(); }
template <> std::optional<Lingering> decode(std::string_view p) {
  return exactly<Lingering>(p, [](PayloadReader& r, Lingering& f) { return f.key = r.str(), f.token = r.str(), true; });
}

void encode(std::string& out, const Attached& f) {
  FrameWriter w(out);
  w.begin(Type::attached)
      .u64(f.replay_from)
      .u64(f.replay_to)
      .u64(f.gap_bytes)
      .u8(f.send_was_live ? 1 : 0)
      .i32(f.shell_pid)
      .u64(f.input_received)
      .str(f.next_token);
  if (f.shown) w.u64(*f.shown);
  w.end();
}
template <> std::optional<Attached> decode(std::string_view p) {
  return exactly<Attached>(p, [](PayloadReader& r, Attached& f) {
    f.replay_from = r.u64(), f.replay_to = r.u64(), f.gap_bytes = r.u64();
    f.send_was_live = r.u8() != 0;
    f.shell_pid = r.i32();
    f.input_received = r.u64();
    f.next_token = r.str();
    if (!r.done() && !r.failed()) f.shown = r.u64();
    return true;
  });
}

void encode(std::string& out, const ErrorFrame& f) { FrameWriter(out).begin(Type::error).u32(f.code).str(f.text).end(); }
template <> std::optional<ErrorFrame> decode(std::string_view p) {
  return exactly<ErrorFrame>(p, [](PayloadReader& r, ErrorFrame& f) { return f.code = r.u32(), f.text = r.str(), true; });
}

void encode_empty(std::string& out, Type type) { FrameWriter(out).begin(type).end(); }

}  // namespace dshpty::frames
