// The frames of background jobs on a remote session (link/frames.hpp: WATCH_PORT, LOOK,
// STOP and their answers PORT_SEEN, TREE, STOPPED), encoded and decoded as the others are
// in messages.cpp.
#include "link/messages.hpp"

namespace dshpty::frames {
namespace {

// A list's entries stop where the frame would outgrow this (the rest is left out: a tree
// of thousands of listeners or survivors says its first ones).
constexpr std::size_t kListBudget = kMaxFrame - 1024;
constexpr std::uint32_t kMaxEntries = kMaxFrame / 4;

template <class F, class Read>
std::optional<F> exactly(std::string_view payload, Read read) {
  PayloadReader r(payload);
  F f;
  if (!read(r, f) || !r.done()) return std::nullopt;
  return f;
}

// Writes up to all of `list` with `put`, its count first, within the frame's budget.
template <class T, class Put>
void bounded_list(std::string& out, std::size_t frame_start, const std::vector<T>& list, Put put) {
  const std::size_t count_at = out.size();
  FrameWriter(out).u32(0);
  std::uint32_t n = 0;
  for (const T& item : list) {
    const std::size_t before = out.size();
    put(item);
    if (out.size() - frame_start > kListBudget) {
      out.resize(before);
      break;
    }
    ++n;
  }
  for (int i = 0; i < 4; ++i) out[count_at + i] = static_cast<char>((n >> (8 * i)) & 0xff);
}

template <class T, class Get>
bool read_list(PayloadReader& r, std::vector<T>& list, Get get) {
  const std::uint32_t n = r.u32();
  if (n > kMaxEntries) return false;
  for (std::uint32_t i = 0; i < n && !r.failed(); ++i) list.push_back(get(r));
  return !r.failed();
}

}  // namespace

void encode(std::string& out, const WatchPort& f) { FrameWriter(out).begin(Type::watch_port).u32(f.seq).u16(f.port).end(); }
template <> std::optional<WatchPort> decode(std::string_view p) {
  return exactly<WatchPort>(p, [](PayloadReader& r, WatchPort& f) { return f.seq = r.u32(), f.port = r.u16(), true; });
}

void encode(std::string& out, const Look& f) { FrameWriter(out).begin(Type::look).u32(f.seq).end(); }
template <> std::optional<Look> decode(std::string_view p) {
  return exactly<Look>(p, [](PayloadReader& r, Look& f) { return f.seq = r.u32(), true; });
}

void encode(std::string& out, const Stop& f) {
  FrameWriter w(out);
  w.begin(Type::stop).u32(f.seq).u32(f.since_ms);
  if (f.input_at) w.u64(*f.input_at);
  w.end();
}
template <> std::optional<Stop> decode(std::string_view p) {
  return exactly<Stop>(p, [](PayloadReader& r, Stop& f) {
    f.seq = r.u32(), f.since_ms = r.u32();
    if (!r.done() && !r.failed()) f.input_at = r.u64();
    return true;
  });
}

void encode(std::string& out, const PortSeen& f) {
  FrameWriter(out).begin(Type::port_seen).u32(f.seq).u16(f.port).i32(f.pid).str(f.address).end();
}
template <> std::optional<PortSeen> decode(std::string_view p) {
  return exactly<PortSeen>(p, [](PayloadReader& r, PortSeen& f) {
    f.seq = r.u32(), f.port = r.u16(), f.pid = r.i32();
    f.address = r.str();
    return true;
  });
}

void encode(std::string& out, const Tree& f) {
  const std::size_t start = out.size();
  FrameWriter w(out);
  w.begin(Type::tree).u32(f.seq).u8(f.known ? 1 : 0);
  if (f.known) {
    w.u32(f.processes);
    bounded_list(out, start, f.listening, [&](const TreeListener& l) {
      FrameWriter(out).u16(l.port).str(l.address).i32(l.pid).str(l.command);
    });
  }
  w.end();
}
template <> std::optional<Tree> decode(std::string_view p) {
  return exactly<Tree>(p, [](PayloadReader& r, Tree& f) {
    f.seq = r.u32();
    f.known = r.u8() != 0;
    if (!f.known) return true;
    f.processes = r.u32();
    return read_list(r, f.listening, [](PayloadReader& r) {
      TreeListener l;
      l.port = r.u16(), l.address = r.str(), l.pid = r.i32(), l.command = r.str();
      return l;
    });
  });
}

void encode(std::string& out, const Stopped& f) {
  const std::size_t start = out.size();
  FrameWriter w(out);
  w.begin(Type::stopped).u32(f.seq).str(f.refused).u8(f.stopped ? 1 : 0);
  bounded_list(out, start, f.signals, [&](const std::string& s) { FrameWriter(out).str(s); });
  bounded_list(out, start, f.remaining, [&](const StoppedProcess& s) {
    FrameWriter(out).i32(s.pid).str(s.command).str(s.why);
  });
  w.end();
}
template <> std::optional<Stopped> decode(std::string_view p) {
  return exactly<Stopped>(p, [](PayloadReader& r, Stopped& f) {
    f.seq = r.u32();
    f.refused = r.str();
    f.stopped = r.u8() != 0;
    return read_list(r, f.signals, [](PayloadReader& r) { return std::string(r.str()); }) &&
           read_list(r, f.remaining, [](PayloadReader& r) {
             StoppedProcess s;
             s.pid = r.i32(), s.command = r.str(), s.why = r.str();
             return s;
           });
  });
}

}  // namespace dshpty::frames
