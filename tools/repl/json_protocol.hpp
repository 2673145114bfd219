// The JSON Lines protocol of `dshpty-repl --json` (docs/tool-protocol.md): request lines
// parsed and checked into engine requests, results and errors encoded into response
// objects. Pure: no service, no I/O.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "dshpty/errors.hpp"
#include "dshpty/service.hpp"
#include "dshpty/session.hpp"
#include "engine.hpp"
#include "json_scan.hpp"
#include "requests.hpp"

namespace dshpty::repl::json_protocol {

// The JSON face's protocol version, as `hello` reports it: raised when a change would break
// a client written against the previous one (a field renamed or removed, not one added).
inline constexpr int kProtocolVersion = 1;

using Json = nlohmann::ordered_json;
// A request's id exactly as sent (any JSON value), echoed byte for byte.
using RequestId = tool::RequestId;

inline constexpr std::string_view kDefaultOwner = "default";

// The ops that act on a session are the engine's requests as they are; cancel and output
// name their send by its request id.
using OpenOp = engine::OpenRequest;
using SendOp = engine::SessionSend;
using ReadOp = engine::SessionRead;
using ScreenOp = engine::SessionScreen;  // a read with "screen": true
using ResizeOp = engine::SessionResize;
using SignalOp = engine::SessionSignal;
using CloseOp = engine::SessionClose;
struct CancelOp {
  RequestId send_id;
};
struct OutputOp {
  RequestId send_id;
  engine::SendOutputRead read{};  // max_bytes: the face's cap, set when answered
};
struct StopOp {
  RequestId send_id;
};
struct ListOp {};
struct AttachOp {
  std::optional<std::string> name;
};
struct ActivityOp {};
struct DisposeOwnerOp {};
struct ShutdownOp {};
struct HelloOp {};  // a client's start-up check: {name, version, protocol}

using Op = std::variant<OpenOp, SendOp, CancelOp, OutputOp, ReadOp, ScreenOp, ResizeOp, SignalOp, CloseOp, ListOp,
                        ActivityOp, DisposeOwnerOp, ShutdownOp, AttachOp, HelloOp, StopOp>;

struct Request {
  RequestId id;                              // echoed in the response
  std::string owner{kDefaultOwner};          // the owner label
  Op op;
};

struct BadRequest {
  RequestId id;  // null when the line had no readable id
  Error error;   // INVALID_ARGUMENT
};

// One request line. Never throws, whatever the bytes. A key any object holds twice is
// refused (INVALID_ARGUMENT naming it), under the request's id unless "id" is that key.
std::variant<Request, BadRequest> parse_request(std::string_view line);

// The key that matches a send request's id to a later cancel/output's sendId.
inline std::string id_key(const RequestId& id) { return id.key(); }

// One response line: compact JSON, the id as the request wrote it, invalid UTF-8 replaced
// (never throws), no newline.
std::string ok_response(const RequestId& id, Json result);
std::string error_response(const RequestId& id, const Error& error);
Json encode_error(const Error& error);  // {code, message, errors?}

// {"kind":"running"}, {"kind":"exited","exitCode":N|null,"signal":"SIGKILL"|null} or
// {"kind":"lost","reason":"ssh exited 255: ..."}.
Json encode_status(const SessionStatus& status);
Json encode_snapshot(const SessionSnapshot& session);
// {"kind": "pids"|"memory", "pid"?, "command"?}: a list entry's and a send result's `limitHit`.
Json encode_limit_hit(const LimitHit& hit);
// Text fields are cut to `cap` bytes (text/truncation.hpp: head, the marker line, tail) and
// flagged `truncated`, with `omittedLines` and `omittedBytes` when something was left out.
// A send's viewport comes cut by the backend; a delta keeps its newest `cap` bytes.
Json encode_open(const SpawnResult& result, std::size_t cap);
Json encode_send(const SendResult& result);
Json encode_output(const OutputDelta& delta, std::size_t cap);
Json encode_read(const ReadPage& page, std::size_t cap);
// {rows, cols, lines, cursor: {row, col, visible}, alternate, title}; row and col 0-based.
// What a session runs: {state, job?: {command, elapsedMs, processes}, listening: [...]}.
Json encode_activity(const Activity& activity);
// A stop's answer: {stopped, signals, remaining: [{pid, command, why}], takenBackBytes?}.
Json encode_stop(const StopResult& result);
// A condition's match: {output} or {port, pid, address}.
Json encode_match(const SendMatch& match);
Json encode_screen(const ScreenSnapshot& screen);
Json encode_signal(const SignalResult& result);
// {"sessions":[...]}: each taken-over session as in list, with replayedBytes, gapBytes and
// sendEnded (when a send was live as the last host went away); a tombstone as
// {sessionId: null, name, type, pid: null, status: {kind: exited, ..., reason}, replayedBytes: 0, gapBytes: 0}.
Json encode_attach(const std::vector<engine::AttachOutcome>& outcomes);

}  // namespace dshpty::repl::json_protocol
