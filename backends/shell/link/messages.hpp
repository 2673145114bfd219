// The frames of link/frames.hpp as structs: one per frame type, its fields in wire order.
// encode() appends the whole frame; decode() reads a payload exactly (nullopt for one short,
// long or otherwise malformed). Both sides build and read every frame here and nowhere else,
// so a field is added in one place. Byte runs (In, Out) are views into the payload: valid as
// long as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "link/frames.hpp"

namespace dshpty::frames {

// ---- host -> helper ----------------------------------------------------------------------

struct Hello {
  std::uint32_t version = kProtocolVersion;
  std::uint32_t ping_ms = 0;
  std::uint32_t link_timeout_ms = 0;
};
struct Open {
  std::uint16_t rows = 0, cols = 0;
  std::string session_id;
  std::string term;
  std::optional<std::string> cwd;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // overrides: "NAME=value" sets, "NAME" unsets
  // Trailing, only when one is set (0: unset): the session's limits.
  std::uint64_t limit_pids = 0, limit_memory = 0, limit_cpu_us = 0;
  bool has_limits() const { return limit_pids || limit_memory || limit_cpu_us; }
};
struct In { std::string_view bytes; };
struct Resize { std::uint16_t rows = 0, cols = 0; };
struct Signal { std::int32_t pgid = 0, signo = 0; };
struct Mark { std::uint8_t mark = 0; };
struct Probe { std::uint32_t seq = 0; };
struct Ack { std::uint64_t offset = 0; };
struct Kill { std::uint32_t grace_ms = 0; };
struct Linger {
  std::uint32_t seconds = 0;
  std::uint64_t ring_bytes = 0;
  std::string state_dir, owner, name, type;  // name "" : none
};
struct Attach {
  std::string key, token, owner;
  bool resume = false;
  std::uint64_t output_from = 0;
};
struct Sending { bool live = false; };
struct TakeBack { std::uint32_t own = 0; };
struct Shown { std::uint64_t offset = 0; };
struct WatchPort {
  std::uint32_t seq = 0;
  std::uint16_t port = 0;  // 0: no watch
};
struct Look { std::uint32_t seq = 0; };
struct Stop {
  std::uint32_t seq = 0;
  std::uint32_t since_ms = 0;  // the job started this long ago
  std::optional<std::uint64_t> input_at;  // where its line starts in IN (kCapStopAt)
};

// ---- helper -> host ----------------------------------------------------------------------

struct Welcome {
  std::uint32_t version = kProtocolVersion;
  std::uint32_t capabilities = 0;
  std::string build;
};
struct Started { std::int32_t pid = 0; };
struct StartFailed { std::string what; };
struct Out {
  std::uint64_t offset = 0;
  std::string_view bytes;
};
struct State {
  std::uint32_t seq = 0;  // 0: unasked
  std::uint64_t offset = 0;
  TerminalFacts facts;
};
struct Written { std::uint64_t bytes = 0; };
struct Exited {
  bool by_signal = false;
  std::int32_t value = 0;  // the exit code or the signal
};
struct Taken { std::uint32_t own = 0, taken = 0; };
struct PortSeen {
  std::uint32_t seq = 0;
  std::uint16_t port = 0;
  std::int32_t pid = 0;
  std::string address;
};
struct TreeListener {
  std::uint16_t port = 0;
  std::string address;
  std::int32_t pid = 0;
  std::string command;
  bool operator==(const TreeListener&) const = default;
};
struct Tree {
  std::uint32_t seq = 0;
  bool known = false;  // false: the tree cannot be looked at (nothing else is sent)
  std::uint32_t processes = 0;
  std::vector<TreeListener> listening;
};
struct StoppedProcess {
  std::int32_t pid = 0;
  std::string command, why;
  bool operator==(const StoppedProcess&) const = default;
};
struct Stopped {
  std::uint32_t seq = 0;
  std::string refused;  // "" : the stop ran, and the fields below are its report
  bool stopped = false;
  std::vector<std::string> signals;
  std::vector<StoppedProcess> remaining;
};
struct LimitHitFrame { std::uint8_t kind = 0; };  // 1 pids, 2 memory
struct Lingering { std::string key, token; };
struct Attached {
  std::uint64_t replay_from = 0, replay_to = 0, gap_bytes = 0;
  bool send_was_live = false;
  std::int32_t shell_pid = 0;
  std::uint64_t input_received = 0;
  std::string next_token;
  std::optional<std::uint64_t> shown;  // absent from an older helper's
};
struct ErrorFrame {
  std::uint32_t code = 0;  // ErrorCode; a reader keeps codes it does not know
  std::string text;
};

// The build a helper names in its WELCOME ("dshpty-supervisor 0.1.0").
std::string helper_build();

// ---- encode: appends one frame -------------------------------------------------------------

void encode(std::string& out, const Hello& f);
// False (and nothing appended) when argv and env do not fit one frame.
bool encode(std::string& out, const Open& f);
void encode(std::string& out, const Resize& f);
void encode(std::string& out, const Signal& f);
void encode(std::string& out, const Mark& f);
void encode(std::string& out, const Probe& f);
void encode(std::string& out, const Ack& f);
void encode(std::string& out, const Kill& f);
void encode(std::string& out, const Linger& f);
void encode(std::string& out, const Attach& f);
void encode(std::string& out, const Sending& f);
void encode(std::string& out, const TakeBack& f);
void encode(std::string& out, const Shown& f);
void encode(std::string& out, const WatchPort& f);
void encode(std::string& out, const Look& f);
void encode(std::string& out, const Stop& f);
void encode(std::string& out, const Welcome& f);
void encode(std::string& out, const Started& f);
void encode(std::string& out, const StartFailed& f);
void encode(std::string& out, const State& f);
void encode(std::string& out, const Written& f);
void encode(std::string& out, const Exited& f);
void encode(std::string& out, const Taken& f);
void encode(std::string& out, const PortSeen& f);
// TREE and STOPPED: their lists are cut to what one frame holds (a tree listening on
// thousands of ports says the first ones).
void encode(std::string& out, const Tree& f);
void encode(std::string& out, const Stopped& f);
void encode(std::string& out, const LimitHitFrame& f);
void encode(std::string& out, const Lingering& f);
void encode(std::string& out, const Attached& f);
void encode(std::string& out, const ErrorFrame& f);
// IN and OUT: as many frames as `bytes` needs, kMaxOutChunk bytes each at most (none for no
// bytes). encode_out returns the offset after them.
void encode_in(std::string& out, std::string_view bytes);
std::uint64_t encode_out(std::string& out, std::uint64_t offset, std::string_view bytes);
// PING, PONG, OUTPUT_ENDED, QUIESCENT: a type and no payload.
void encode_empty(std::string& out, Type type);
struct Empty { Type type; };
inline void encode(std::string& out, const Empty& f) { encode_empty(out, f.type); }
inline void encode(std::string& out, const In& f) { encode_in(out, f.bytes); }
// Frames encoded already (several built together, to go out as one batch).
struct Encoded { std::string bytes; };
inline void encode(std::string& out, const Encoded& f) { out.append(f.bytes); }

// ---- decode: a payload, read exactly -------------------------------------------------------

template <class F>
std::optional<F> decode(std::string_view payload);

// An empty frame's payload is empty.
inline bool decode_empty(std::string_view payload) { return payload.empty(); }

}  // namespace dshpty::frames
