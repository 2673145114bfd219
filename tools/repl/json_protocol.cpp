#include "json_protocol.hpp"

#include <limits>

#include "dshpty/linger.hpp"
#include "json_args.hpp"
#include "json_text_repair.hpp"
#include "request_fields.hpp"
#include "text/truncation.hpp"

namespace dshpty::repl::json_protocol {

namespace {

Error invalid(std::string message) { return make_error(Code::INVALID_ARGUMENT, std::move(message)); }

const std::string kLingerRange = "must be whole seconds 0.." + std::to_string(kMaxLingerSeconds);

// The one reader of JSON fields (json_args.hpp: null is absent, 5000.0 is 5000).
using Fields = tool::JsonArgs<Json>;

// A non-negative integer that fits `unsigned` (the service checks its own range).
std::optional<unsigned> count(Fields& f, const char* name, bool required) {
  const auto value = f.integer(name, required);
  if (!value) return std::nullopt;
  if (*value < 0 || *value > std::numeric_limits<unsigned>::max()) return f.fail(name, "is out of range");
  return static_cast<unsigned>(*value);
}

// The engine checks the range (one rule on every face).
std::optional<std::chrono::milliseconds> milliseconds(Fields& f, const char* name) {
  const auto value = f.integer(name);
  if (!value) return std::nullopt;
  return std::chrono::milliseconds(*value);
}

std::variant<Op, Error> parse_op(const std::string& op, Fields& f, std::string_view text) {
  auto done = [&](Op value) -> std::variant<Op, Error> {
    if (f.failed()) return f.error();
    return value;
  };
  if (op == "open") {
    OpenOp open;
    if (auto type = f.string("type", true)) open.type = *type;
    open.name = f.string("name", false);
    open.cwd = f.string("cwd", false);
    for (const auto& option : engine::kOpenOptions) {
      std::string key(option.key);
      if (auto value = f.string(key.c_str(), false)) open.options[key] = *value;
    }
    // Whole seconds: 5 and 5.0 are the same number; 1.5 is no number of seconds.
    if (auto linger = f.integer_in("linger", 0, kMaxLingerSeconds, kLingerRange)) open.options["linger"] = std::to_string(*linger);
    if (auto limits = f.limits("limits")) open.limits = *limits;
    if (auto record = f.boolean("record")) open.options["record"] = *record ? "true" : "false";
    return done(std::move(open));
  }
  if (op == "send") {
    SendOp send;
    if (auto id = f.string("sessionId", true)) send.session_id = *id;
    // "" and [] count as absent; a send with neither is a check-in (it types nothing).
    if (auto text = f.string("text", false)) send.request.text = std::move(*text);
    if (auto keys = f.strings("keys")) send.request.keys = std::move(*keys);
    send.request.submit = f.boolean("submit");
    // Enter only with text (faces.md's rule, as on MCP): keys alone, or nothing, press none.
    if (!send.request.submit && send.request.text.empty()) send.request.submit = false;
    send.request.timeout = milliseconds(f, "timeoutMs");
    send.request.idle = milliseconds(f, "idleMs");
    if (auto until = f.until("until")) send.request.until = std::move(*until);
    send.request.background = f.boolean("background").value_or(false);
    return done(std::move(send));
  }
  if (op == "cancel" || op == "output" || op == "stop") {
    // The id of the send as it was written, any JSON value (null too: a send's id may be null).
    if (!f.failed() && !tool::member_token(text, "sendId")) return invalid("missing field \"sendId\"");
    if (f.failed()) return f.error();
    const RequestId send_id(tool::member_token(text, "sendId").value_or("null"));
    if (op == "cancel") return Op(CancelOp{send_id});
    if (op == "stop") return Op(StopOp{send_id});
    OutputOp output{send_id};
    if (auto offset = f.integer("offset")) {
      if (*offset < 0) return invalid("field \"offset\" must be a byte offset (0 or more), got " + std::to_string(*offset));
      output.read.offset = static_cast<std::uint64_t>(*offset);
    }
    output.read.wait = milliseconds(f, "waitMs");
    if (f.failed()) return f.error();
    if (output.read.wait && (output.read.wait->count() < 1 || output.read.wait->count() > engine::kMaxWaitMs))
      return invalid("waitMs must be an integer from 1 to " + std::to_string(engine::kMaxWaitMs) + " ms, got " +
                     std::to_string(output.read.wait->count()));
    return Op(std::move(output));
  }
  if (op == "read" && f.boolean("screen").value_or(false)) {
    ScreenOp screen;
    if (auto id = f.string("sessionId", true)) screen.session_id = *id;
    return done(std::move(screen));
  }
  if (op == "resize") {
    ResizeOp resize;
    if (auto id = f.string("sessionId", true)) resize.session_id = *id;
    if (auto rows = count(f, "rows", true)) resize.rows = *rows;
    if (auto cols = count(f, "cols", true)) resize.cols = *cols;
    return done(std::move(resize));
  }
  if (op == "read") {
    ReadOp read;
    if (auto id = f.string("sessionId", true)) read.session_id = *id;
    if (auto offset = f.integer("offset")) read.request.offset = *offset;
    if (auto count = f.integer("count")) read.request.count = *count;
    return done(std::move(read));
  }
  if (op == "signal") {
    SignalOp signal;
    if (auto id = f.string("sessionId", true)) signal.session_id = *id;
    if (auto name = f.string("signal", true)) {
      const auto parsed = parse_signal(*name);
      if (!parsed) return invalid("unknown signal \"" + *name + "\" (SIGINT SIGTERM SIGKILL SIGTSTP SIGHUP)");
      signal.signal = *parsed;
    }
    return done(std::move(signal));
  }
  if (op == "close") {
    CloseOp close;
    if (auto id = f.string("sessionId", true)) close.session_id = *id;
    return done(std::move(close));
  }
  if (op == "list") return done(ListOp{});
  if (op == "attach") {
    AttachOp attach;
    attach.name = f.string("name", false);
    return done(std::move(attach));
  }
  if (op == "activity") return done(ActivityOp{});
  if (op == "disposeOwner") return done(DisposeOwnerOp{});
  if (op == "shutdown") return done(ShutdownOp{});
  if (op == "hello") return done(HelloOp{});
  return invalid("unknown op \"" + op + "\"");
}

// `out`'s text field `name` cut to `cap` (head, marker line, tail), with `truncated` and,
// when something was left out, `omittedLines` and `omittedBytes`.
void put_cut(Json& out, const char* name, text::Cut cut) {
  out[name] = std::move(cut.text);
  out["truncated"] = cut.truncated;
  if (cut.truncated) {
    out["omittedLines"] = cut.omitted.lines;
    out["omittedBytes"] = cut.omitted.bytes;
  }
}

}  // namespace

std::variant<Request, BadRequest> parse_request(std::string_view line) {
  if (auto refusal = tool::shape_refusal(line)) {
    const auto id = tool::member_token(line, "id");
    return BadRequest{id ? RequestId(*id) : RequestId(), invalid(std::move(*refusal))};
  }
  Json object = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  std::string_view text = line;  // what was parsed: the line, or its repaired copy
  tool::ReadableLine readable;
  if (object.is_discarded()) {
    // Well-formed but for bad bytes in its strings or a number past a double's range:
    // refused under its own id (an id past that range is fine: it is echoed as sent).
    readable = tool::make_readable(line);
    if (readable.changed()) object = Json::parse(readable.parse_text, nullptr, false);
    if (!readable.changed() || !object.is_object()) return BadRequest{{}, invalid("request is not valid JSON")};
    text = readable.text;
  }
  if (!object.is_object()) return BadRequest{{}, invalid("request must be a JSON object")};

  // The parser kept one of two equal keys; the request is refused, never half-read.
  const auto duplicate = tool::find_duplicate_key(text);
  const bool id_unclear = duplicate && (duplicate->path.empty() ? duplicate->key == "id" : duplicate->path[0] == "id");
  Request request;
  const auto id_token = tool::member_token(text, "id");
  if (id_token && !id_unclear) request.id = RequestId(*id_token);
  if (duplicate) return BadRequest{request.id, invalid(duplicate->message())};
  if (readable.bad_bytes) return BadRequest{request.id, invalid(std::string(tool::kBadBytesMessage))};
  if (readable.huge_outside(id_token.value_or(std::string_view())))
    return BadRequest{request.id, invalid("a number in the request is out of range")};
  if (!object.contains("id")) return BadRequest{{}, invalid("missing field \"id\"")};

  Fields fields(object, "field");
  const auto op = fields.string("op", true);
  if (!op) return BadRequest{request.id, fields.error()};
  std::vector<std::string_view> names;
  for (auto it = object.begin(); it != object.end(); ++it) names.emplace_back(it.key());
  if (auto known = tool::check_fields(*op, names); !known) return BadRequest{request.id, known.error()};
  // disposeOwner acts on a label, so it must name one.
  const auto owner = fields.string("owner", *op == "disposeOwner");
  if (fields.failed()) return BadRequest{request.id, fields.error()};
  if (owner) request.owner = *owner;

  auto parsed = parse_op(*op, fields, text);
  if (auto* error = std::get_if<Error>(&parsed)) return BadRequest{request.id, *error};
  request.op = std::move(std::get<Op>(parsed));
  return request;
}

namespace {
std::string serialize(const Json& response) { return response.dump(-1, ' ', false, Json::error_handler_t::replace); }
}  // namespace

std::string ok_response(const RequestId& id, Json result) {
  return tool::with_id(id, serialize(Json{{"ok", true}, {"result", std::move(result)}}));
}

Json encode_error(const Error& error) {
  Json out{{"code", std::string(code_name(error->code))}, {"message", error->message}};
  if (!error->errors.empty()) {
    Json children = Json::array();
    for (const Error& child : error->errors)
      if (child) children.push_back(encode_error(child));
    out["errors"] = std::move(children);
  }
  return out;
}

std::string error_response(const RequestId& id, const Error& error) {
  return tool::with_id(id, serialize(Json{{"ok", false}, {"error", encode_error(error)}}));
}

Json encode_status(const SessionStatus& status) {
  if (status.running()) return Json{{"kind", "running"}};
  if (status.kind == SessionStatus::Kind::lost) return Json{{"kind", "lost"}, {"reason", status.reason}};
  if (status.kind == SessionStatus::Kind::reconnecting) return Json{{"kind", "reconnecting"}, {"reason", status.reason}};
  Json out{{"kind", "exited"},
           {"exitCode", status.exit_code ? Json(*status.exit_code) : Json(nullptr)},
           {"signal", status.signal ? Json(signal_number_name(*status.signal)) : Json(nullptr)}};
  // A tombstone's: "killed after linger" (docs/outlive.md).
  if (!status.reason.empty()) out["reason"] = status.reason;
  return out;
}

Json encode_snapshot(const SessionSnapshot& session) {
  Json out{{"sessionId", session.id}};
  if (session.name) out["name"] = *session.name;
  out["type"] = session.type;
  if (session.pid) out["pid"] = *session.pid;
  out["status"] = encode_status(session.status);
  if (session.confinement) {
    const Confinement& c = *session.confinement;
    out["confinement"] = Json{{"mode", c.mode}, {"network", c.network ? "on" : "off"},
                              {"writableRoots", c.writable_roots}, {"protected", c.protected_paths}};
  }
  if (session.limit_hit) out["limitHit"] = encode_limit_hit(*session.limit_hit);
  if (session.recording) {
    const Recording& r = *session.recording;
    out["recording"] = Json{{"path", r.path}, {"state", std::string(recording_state_name(r.state))}, {"bytes", r.bytes}};
    if (r.error) out["recording"]["error"] = *r.error;
  }
  if (session.activity) out["activity"] = encode_activity(*session.activity);
  return out;
}

Json encode_activity(const Activity& activity) {
  Json out{{"state", std::string(activity_state_name(activity.state))}};
  if (activity.state == Activity::State::busy) {
    Json job = Json::object();
    job["command"] = activity.command.value_or("");
    job["elapsedMs"] = activity.elapsed_ms.value_or(0);
    if (activity.processes) job["processes"] = *activity.processes;
    out["job"] = std::move(job);
  }
  Json listening = Json::array();
  for (const auto& l : activity.listening)
    listening.push_back(Json{{"port", l.port}, {"address", l.address}, {"pid", l.pid}, {"command", l.command}});
  out["listening"] = std::move(listening);
  return out;
}

Json encode_limit_hit(const LimitHit& hit) {
  Json out{{"kind", std::string(limit_kind_name(hit.kind))}};
  if (hit.pid) out["pid"] = *hit.pid;
  if (hit.command) out["command"] = *hit.command;
  return out;
}

Json encode_open(const SpawnResult& result, std::size_t cap) {
  Json out = encode_snapshot(result.session);
  put_cut(out, "motd", text::cut_to_fit(result.motd, cap));
  return out;
}

Json encode_send(const SendResult& result) {
  // The backend cut the viewport to the cap the engine passed down: shown as it came.
  Json out{{"viewport", result.viewport},
           {"waitReason", std::string(wait_reason_name(result.wait_reason))},
           {"sessionStatus", encode_status(result.session_status)},
           {"truncated", result.truncated}};
  if (result.truncated) {
    out["omittedLines"] = result.omitted_lines;
    out["omittedBytes"] = result.omitted_bytes;
  }
  out["exitCode"] = result.exit_code ? Json(*result.exit_code) : Json(nullptr);
  out["cwd"] = result.cwd ? Json(*result.cwd) : Json(nullptr);
  out["inputHidden"] = result.input_hidden;
  out["evidence"] = std::string(evidence_name(result.evidence));
  if (result.taken_back_bytes > 0) out["takenBackBytes"] = result.taken_back_bytes;
  if (result.line_state) out["lineState"] = std::string(line_state_name(*result.line_state));
  if (result.queued_behind) {
    out["queuedBehind"] = Json{{"pid", result.queued_behind->pid}, {"command", result.queued_behind->command}};
  }
  if (result.screen) out["screen"] = encode_screen(*result.screen);
  if (result.match) out["match"] = encode_match(*result.match);
  return out;
}

Json encode_stop(const StopResult& result) {
  Json remaining = Json::array();
  for (const auto& r : result.remaining) remaining.push_back(Json{{"pid", r.pid}, {"command", r.command}, {"why", r.why}});
  Json out{{"stopped", result.stopped}, {"signals", result.signals}, {"remaining", std::move(remaining)}};
  if (result.taken_back_bytes > 0) out["takenBackBytes"] = result.taken_back_bytes;
  return out;
}

Json encode_match(const SendMatch& match) {
  if (match.port) return Json{{"port", *match.port}, {"pid", match.pid}, {"address", match.address}};
  return Json{{"output", match.output.value_or("")}};
}

Json encode_screen(const ScreenSnapshot& screen) {
  return Json{{"rows", screen.rows},
              {"cols", screen.cols},
              {"lines", screen.lines},
              {"cursor", Json{{"row", screen.cursor_row}, {"col", screen.cursor_col}, {"visible", screen.cursor_visible}}},
              {"alternate", screen.alternate},
              {"title", screen.title}};
}

Json encode_output(const OutputDelta& delta, std::size_t cap) {
  // A delta keeps its newest bytes: the oldest go first, as the backend's own bound drops them.
  bool truncated = delta.truncated;
  const std::string_view kept = text::newest(delta.text, cap, truncated);
  return Json{{"delta", std::string(kept)}, {"truncated", truncated}};
}

Json encode_read(const ReadPage& page, std::size_t cap) {
  text::Cut cut = text::cut_to_fit(page.text, cap);
  Json out{{"text", std::move(cut.text)},
           {"totalLines", page.total_lines},
           {"lineBegin", page.line_begin},
           {"lineEnd", page.line_end},
           {"truncated", page.truncated || cut.truncated}};
  if (cut.truncated) {
    out["omittedLines"] = cut.omitted.lines;
    out["omittedBytes"] = cut.omitted.bytes;
  }
  return out;
}

Json encode_attach(const std::vector<engine::AttachOutcome>& outcomes) {
  Json sessions = Json::array();
  for (const auto& o : outcomes) {
    if (o.session) {
      Json s = encode_snapshot(o.session->session);
      const AttachReport report = o.session->attached.value_or(AttachReport{});
      s["replayedBytes"] = report.replayed_bytes;
      s["gapBytes"] = report.gap_bytes;
      if (report.send_ended) s["sendEnded"] = *report.send_ended;
      sessions.push_back(std::move(s));
    } else if (o.tombstone) {
      Json s{{"sessionId", nullptr}};
      if (o.tombstone->name) s["name"] = *o.tombstone->name;
      s["type"] = o.tombstone->type;
      s["pid"] = nullptr;
      s["status"] = encode_status(o.tombstone->status);
      s["replayedBytes"] = 0;
      s["gapBytes"] = 0;
      s["proof"] = o.tombstone->proof;
      sessions.push_back(std::move(s));
    } else {
      Json s{{"sessionId", nullptr}};
      if (o.name) s["name"] = *o.name;
      s["error"] = encode_error(o.error);
      sessions.push_back(std::move(s));
    }
  }
  return Json{{"sessions", std::move(sessions)}};
}

Json encode_signal(const SignalResult& result) {
  return Json{{"delivered", true}, {"targetPgid", result.target_pgid}};
}

}  // namespace dshpty::repl::json_protocol
