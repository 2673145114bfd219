// The stream protocol between the host (remote/stream_channel.cpp) and a far
// `dshpty-supervisor --stdio` (supervisor/stdio_bridge.cpp), over any byte pipe (ssh,
// `podman exec -i`, `kubectl exec -i`, `sh -c`). This comment is its one definition
// (the design: docs/remote.md).
//
// A frame: u32 length | u8 type | payload, little endian; `length` counts the type byte and
// the payload, so it is at least 1 and at most kMaxFrame. Output is cut into OUT frames of
// at most kMaxOutChunk bytes, so a control frame never waits behind more than one of them.
// Strings and byte runs inside a payload are u32 length | bytes. A frame the reader cannot
// decode (length 0 or over kMaxFrame, an unknown type, a payload short or long for its
// type) is a protocol error: the reader reports it and closes the link; nothing guesses.
//
// host -> helper
//   HELLO    u32 version, u32 ping_ms, u32 link_timeout_ms   first, once
//   OPEN     u16 rows, u16 cols, str session_id, str term, u8 has_cwd, str cwd,
//            u32 argc, str argv[argc], u32 envc, str env[envc]   once, after HELLO
//            env entries are overrides: "NAME=value" sets, "NAME" unsets; the helper
//            builds the shell's environment from its own (shell/environment.hpp)
//            [u64 pids, u64 memory_bytes, u64 cpu_quota_us]   trailing, only with a
//            limit (0: that one unset): the helper puts the tree in cgroups below its
//            own (limits/, docs/security.md) or answers START_FAILED naming the cause;
//            a helper without kCapLimits refuses the longer OPEN (never runs unlimited)
//   IN       bytes                       for the terminal, in order
//   RESIZE   u16 rows, u16 cols
//   SIGNAL   i32 pgid, i32 signo         to that process group of the session
//   MARK     u8 mark                     1: whoever reads the terminal now proves nothing
//                                        until it ran again (the stdin probe's baseline);
//                                        2: the same, said of the shell at its idle prompt,
//                                        its group's only member (its baseline alone: no
//                                        walk of the tree; a helper before 2 takes it as 1);
//                                        0: forget that baseline
//   PROBE    u32 seq                     answer with a STATE of this seq, after the output
//                                        the terminal holds now
//   ACK      u64 offset                  output consumed up to this offset (flow control)
//   KILL     u32 grace_ms                kill the tree (HUP/TERM, SIGKILL after the grace)
//   PING                                 answer PONG
//   LINGER   u32 seconds, u64 ring_bytes, str state_dir, str owner, str name (""
//            none), str type             after OPEN: the session outlives this link for
//            `seconds` (docs/outlive.md); the helper answers LINGERING or ERROR
//   ATTACH   str key, str token, str owner, u8 resume, u64 output_from   instead of
//            OPEN, on a lingering helper's rendezvous socket (or, over a transport, to a
//            far `--stdio` helper, which relays it there): take the session over
//            (docs/outlive.md). resume 0: a new host, the replay starts at the ring's
//            oldest byte; resume 1: the host that held the session reconnects, and the
//            output goes on from output_from (the offset it consumed up to)
//   SENDING  u8 live                     a send of the host's is live (1) or settled (0):
//                                        the next host to attach hears whether one was live
//   TAKE_BACK u32 own                    a cancel: take back the last `own` bytes of IN
//                                        while the terminal's reader has not taken them
//                                        (only to a helper whose WELCOME has kCapTakeBack);
//                                        answered by TAKEN
//   SHOWN    u64 offset                  the host's results have shown the output up to
//                                        this offset: the next host's start there
// The next three only to a helper whose WELCOME has kCapJobs (docs/remote.md, "Jobs"):
//   WATCH_PORT u32 seq, u16 port         watch the session's tree for a TCP listener on
//                                        `port` for kWatchPortForMs (each WATCH_PORT of the
//                                        same seq renews it); answered by PORT_SEEN once
//                                        seen, then the watch ends. Port 0: no watch
//   LOOK     u32 seq                     answered by TREE: the tree's processes and listeners
//   STOP     u32 seq, u32 since_ms       stop the terminal's foreground job, which started
//                                        `since_ms` ago (proc/job_stop.hpp); answered by
//                                        STOPPED once the stop ended
//            [u64 input_at]              trailing, only to a helper with kCapStopAt: the
//                                        job's line is IN's bytes from this offset (the
//                                        helper's count, as ATTACHED's input_received), so
//                                        its start is the moment the helper wrote them
// helper -> host
//   WELCOME      u32 version, u32 capabilities, str build   first, once
//   STARTED      i32 shell pid (the far side's number)
//   START_FAILED str what                the shell could not be started; the tree is then
//                                        killed like any other (QUIESCENT follows a KILL)
//   OUT          u64 offset, bytes       output; offset = bytes ever sent before these
//   STATE        u32 seq (0: unasked), u64 offset, i32 foreground pgid (-1 none),
//                u8 flags, i32 input_unread (-1 unknown), u64 ignored signals of the
//                foreground group's leader (bit signo-1), str cwd of the shell ("" unknown)
//                The facts as of the moment the output up to `offset` had been read: the
//                helper sends one before each OUT whose facts changed, and one per PROBE.
//                `reading` and `leader_is_shell` are only measured for a PROBE.
//   WRITTEN      u64 bytes               input ever written to the terminal
//   OUTPUT_ENDED                         no process holds the terminal: all output sent
//   EXITED       u8 by_signal, i32 code or signal   the shell was reaped
//   QUIESCENT                            after KILL: every process of the tree is gone;
//                                        the helper exits right after
//   PONG
//   TAKEN     u32 own, u32 taken         the answer to TAKE_BACK: of its `own` bytes, how
//                                        many left the terminal's input queue unread
//   LIMIT_HIT u8 kind                    the session's cgroup reached a limit (1 pids,
//                                        2 memory): only for a session whose OPEN carried
//                                        limits, before the OUT read after it was seen
//   LINGERING str key, str token         the session is reachable in the state directory
//                                        under this key, by this token (used once: every
//                                        attach that passes gets the next one)
//   ATTACHED u64 replay_from, u64 replay_to, u64 gap_bytes, u8 send_was_live, u32 shell_pid,
//            u64 input_received, str next_token, u64 shown
//                                        the answer to ATTACH: OUT frames replay the ring
//                                        from replay_from, then live output follows;
//                                        STARTED follows once replay_to was sent.
//                                        input_received: bytes of IN the helper ever took
//                                        (a reconnecting host sends its input on from
//                                        there); next_token: the token for the next attach;
//                                        shown: the last SHOWN offset any host sent
//   PORT_SEEN u32 seq, u16 port, i32 pid, str address   WATCH_PORT's answer
//   TREE     u32 seq, u8 known, u32 processes, u32 n, n x (u16 port, str address, i32 pid,
//            str command)                LOOK's answer (known 0: the tree cannot be looked
//                                        at, the shell is gone; nothing follows)
//   STOPPED  u32 seq, str refused, u8 stopped, u32 n, n x str signal, u32 m, m x (i32 pid,
//            str command, str why)       STOP's answer: refused "" and the stop's report,
//                                        or why no stop began (no foreground job, no shell)
//   ERROR        u32 code, str text      code: ErrorCode below. Fatal (the helper kills what
//                                        it can and exits) but for attach_refused (an
//                                        ATTACH refused: the helper goes on) and
//                                        session_gone (an ATTACH found no lingering
//                                        session: the text carries its tombstone's words)
//
// The helper kills its whole tree with no grace, then exits, on EOF of its stdin, on a
// protocol error, or when nothing came from the host for link_timeout_ms (the host pings
// an idle link every ping_ms, so a live host is never silent that long). A lingering
// session (LINGER) instead keeps its tree and waits for an ATTACH (docs/outlive.md).
// Flow control: the helper stops reading the terminal while more than kWindow bytes of
// output are sent but not ACKed (the program then blocks in write); nothing is dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dshpty::frames {

// The protocol's version, in HELLO and WELCOME; a side that gets another one ends the link
// (a host: the session fails in those words; a helper: ERROR version_mismatch).
// Bump it on any change an older peer would misread: a new frame type sent unasked, a field
// added to, removed from or moved within an existing frame, a meaning changed. Something
// only a peer that announced it uses (a WELCOME capability below, a trailing field read
// when present, like ATTACHED's `shown`) needs no bump.
inline constexpr std::uint32_t kProtocolVersion = 1;
inline constexpr std::size_t kMaxFrame = 64 * 1024;
inline constexpr std::size_t kMaxOutChunk = 32 * 1024;
inline constexpr std::uint64_t kWindow = 1024 * 1024;
// How long a WATCH_PORT lasts unrenewed (the host renews it while a send waits on the port).
inline constexpr std::uint32_t kWatchPortForMs = 2000;

// ERROR's code. A host takes a code it does not know as helper_failed.
enum class ErrorCode : std::uint32_t {
  version_mismatch = 1,  // HELLO named a version this helper does not speak
  helper_failed = 2,     // the helper lost its tree: the tree's end is unconfirmed
  protocol_error = 3,    // the host broke the protocol
  attach_refused = 4,    // an ATTACH refused (a stale token, another owner); the helper goes on
  linger_unsafe = 5,     // LINGER cannot be honoured: the session does not run at all
  session_gone = 6,      // an ATTACH found no lingering session (it ended)
};
// A code's name for messages ("ATTACH_REFUSED"), or nullptr for one outside the enum.
const char* error_code_name(std::uint32_t code);

// WELCOME capabilities.
inline constexpr std::uint32_t kCapProvesReaders = 1;  // the far side has the stdin probe
inline constexpr std::uint32_t kCapTakeBack = 2;  // the far side answers TAKE_BACK
// The far side takes SHOWN and says `shown` in ATTACHED (an older helper has neither: a host
// never sends it one, and reads its ATTACHED without the field).
inline constexpr std::uint32_t kCapKeepsShown = 4;
// The far side answers WATCH_PORT, LOOK and STOP (background jobs: until.port, list's
// activity, stop). A host never sends them to a helper without it.
inline constexpr std::uint32_t kCapJobs = 8;
// The far side takes OPEN's limits and sends LIMIT_HIT (a host asking limits of a helper
// without it fails the spawn saying so).
inline constexpr std::uint32_t kCapLimits = 16;
// The far side takes STOP's input_at: it notes its clock and newest pid at each IN, so a
// running job's start is exact there (its own `&` found, an earlier one of the same second
// left). A host never sends the longer STOP to a helper without it.
inline constexpr std::uint32_t kCapStopAt = 32;

// STATE flags.
inline constexpr std::uint8_t kStateEcho = 1;
inline constexpr std::uint8_t kStateCanonical = 2;
inline constexpr std::uint8_t kStateModesKnown = 4;
inline constexpr std::uint8_t kStateReading = 8;        // the foreground group blocked reading
inline constexpr std::uint8_t kStateLeaderIsShell = 16;  // its leader not exec'd yet
inline constexpr std::uint8_t kStateRelaying = 32;  // no reader: it waits as a relay does
inline constexpr std::uint8_t kStateRelayingInput = 64;  // ... on another input (not a timeout)

enum class Type : std::uint8_t {
  // host -> helper
  hello = 1, open, in, resize, signal, mark, probe, ack, kill, ping, linger, attach, sending, take_back, shown,
  watch_port, look, stop,
  // helper -> host
  welcome = 64, started, start_failed, out, state, written, output_ended, exited, quiescent,
  pong, error, lingering, attached, taken, port_seen, tree, stopped,
  limit_hit,
};

// A type's name for messages ("OUT"), or nullptr for a byte that names no type.
const char* type_name(std::uint8_t type);

// ---- the STATE frame's facts -----------------------------------------------------------

// What a STATE carries after its seq and offset; both sides read and write it here only.
struct TerminalFacts {
  std::int32_t foreground = -1;   // the terminal's foreground group, -1 for none
  std::uint8_t flags = 0;         // kState*
  std::int32_t input_unread = -1;  // -1: unknown
  std::uint64_t ignored_signals = 0;  // of the foreground group's leader, bit signo-1
  std::string cwd;                // of the shell; "" unknown
  bool operator==(const TerminalFacts&) const = default;
};

// ---- writing ---------------------------------------------------------------------------

// Appends one frame to `out`. The payload is built with the put_* helpers between begin()
// and end().
class FrameWriter {
 public:
  explicit FrameWriter(std::string& out) : out_(out) {}
  FrameWriter& begin(Type type);
  FrameWriter& u8(std::uint8_t v);
  FrameWriter& u16(std::uint16_t v);
  FrameWriter& u32(std::uint32_t v);
  FrameWriter& i32(std::int32_t v) { return u32(static_cast<std::uint32_t>(v)); }
  FrameWriter& u64(std::uint64_t v);
  FrameWriter& str(std::string_view s);     // u32 length | bytes
  FrameWriter& raw(std::string_view bytes);  // bytes to the end of the frame
  FrameWriter& facts(const TerminalFacts& f);  // a STATE's fields after seq and offset
  // Fills in the length. The caller keeps frames within kMaxFrame (asserted).
  void end();

 private:
  std::string& out_;
  std::size_t start_ = 0;
};

// ---- reading ---------------------------------------------------------------------------

struct Frame {
  Type type;
  std::string_view payload;  // valid until the next FrameReader::feed
};

// Reads a frame's payload; any read past its end, or a string longer than what is left,
// sets failed() (and returns zeros): a short frame is an error, never a crash.
class PayloadReader {
 public:
  explicit PayloadReader(std::string_view payload) : rest_(payload) {}
  std::uint8_t u8();
  std::uint16_t u16();
  std::uint32_t u32();
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::uint64_t u64();
  std::string_view str();
  std::string_view rest();  // everything left
  TerminalFacts facts();    // a STATE's fields after seq and offset
  // The payload was read exactly: nothing failed and nothing is left over.
  bool done() const { return !failed_ && rest_.empty(); }
  bool failed() const { return failed_; }

 private:
  bool take(std::size_t n, const char** p);
  std::string_view rest_;
  bool failed_ = false;
};

// Splits a byte stream into frames, whatever the split of its reads.
class FrameReader {
 public:
  void feed(std::string_view bytes);
  // The next whole frame; nullopt when more bytes are needed or after an error.
  std::optional<Frame> next();
  // Why the stream cannot be read (a bad length or type), or empty.
  const std::string& error() const { return error_; }
  // Bytes held that do not make a whole frame yet.
  std::size_t buffered() const { return buffer_.size() - pos_; }
  // Those bytes, handed over (a relay passes them on unread); the reader is then empty.
  std::string take_rest();

 private:
  std::string buffer_;
  std::size_t pos_ = 0;
  std::string error_;
};

}  // namespace dshpty::frames
