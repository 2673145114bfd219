// dshpty-repl --json: request parsing and checking, and the encoding of results and errors.
#include <doctest/doctest.h>

#include "json_protocol.hpp"

using namespace dshpty;
using namespace dshpty::repl;
using namespace dshpty::repl::json_protocol;

namespace {
Request parse_ok(std::string_view line) {
  auto parsed = parse_request(line);
  REQUIRE(std::holds_alternative<Request>(parsed));
  return std::get<Request>(std::move(parsed));
}
BadRequest parse_bad(std::string_view line) {
  auto parsed = parse_request(line);
  REQUIRE(std::holds_alternative<BadRequest>(parsed));
  auto bad = std::get<BadRequest>(std::move(parsed));
  CHECK(bad.error->code == Code::INVALID_ARGUMENT);
  return bad;
}
}  // namespace

TEST_CASE("every op parses with its fields") {
  auto open = parse_ok(R"({"id":1,"op":"open","type":"shell","name":"main","cwd":"/tmp","owner":"a"})");
  CHECK(open.id.token() == "1");
  CHECK(open.owner == "a");
  const auto& o = std::get<OpenOp>(open.op);
  CHECK(o.type == "shell");
  CHECK(*o.name == "main");
  CHECK(*o.cwd == "/tmp");
  CHECK(o.options.empty());
  auto confined = parse_ok(R"({"id":1,"op":"open","type":"shell","terminal":"xterm","sandbox":"read-only","network":"on"})");
  CHECK(std::get<OpenOp>(confined.op).options ==
        std::map<std::string, std::string>{{"network", "on"}, {"sandbox", "read-only"}, {"terminal", "xterm"}});
  parse_bad(R"({"id":1,"op":"open","type":"shell","terminal":7})");

  auto send = parse_ok(R"({"id":"s","op":"send","sessionId":"pty-1","text":"ls","submit":false,"timeoutMs":5,"idleMs":7})");
  CHECK(send.owner == "default");
  const auto& s = std::get<SendOp>(send.op);
  CHECK(s.session_id == "pty-1");
  CHECK(s.request.text == "ls");
  CHECK(s.request.submit == false);
  CHECK(s.request.timeout->count() == 5);
  CHECK(s.request.idle->count() == 7);
  // "" and [] count as absent: such a send types nothing and presses no Enter (a check-in).
  for (const char* empty : {R"({"id":1,"op":"send","sessionId":"p","text":""})", R"({"id":1,"op":"send","sessionId":"p","keys":[]})",
                            R"({"id":1,"op":"send","sessionId":"p","text":"","keys":[]})", R"({"id":1,"op":"send","sessionId":"p"})"}) {
    const auto& checkin = std::get<SendOp>(parse_ok(empty).op).request;
    CHECK(checkin.text.empty());
    CHECK(checkin.keys.empty());
    CHECK_FALSE(checkin.submits());
  }
  CHECK_FALSE(std::get<SendOp>(parse_ok(R"({"id":1,"op":"send","sessionId":"p","keys":["Up"]})").op).request.submits());
  CHECK(std::get<SendOp>(parse_ok(R"({"id":1,"op":"send","sessionId":"p","text":"x"})").op).request.submits());
  CHECK(std::get<SendOp>(parse_ok(R"({"id":1,"op":"send","sessionId":"p","submit":true})").op).request.submits());
  // The range of timeoutMs and idleMs is the engine's to check, the same on every face.
  CHECK(std::get<SendOp>(parse_ok(R"({"id":1,"op":"send","sessionId":"p","timeoutMs":0})").op).request.timeout->count() == 0);

  CHECK(std::get<CancelOp>(parse_ok(R"({"id":2,"op":"cancel","sendId":{"a": [1]}})").op).send_id.token() == R"({"a": [1]})");
  CHECK(std::get<CancelOp>(parse_ok(R"({"id":2,"op":"cancel","sendId":{"a": [1]}})").op).send_id.key() ==
        RequestId(R"({"a":[1]})").key());
  CHECK(std::get<OutputOp>(parse_ok(R"({"id":2,"op":"output","sendId":"s"})").op).send_id.token() == R"("s")");
  auto read = std::get<ReadOp>(parse_ok(R"({"id":3,"op":"read","sessionId":"pty-1","offset":10,"count":20})").op);
  CHECK(read.request.offset == 10);
  CHECK(read.request.count == 20);
  CHECK(std::get<ReadOp>(parse_ok(R"({"id":3,"op":"read","sessionId":"p"})").op).request.count == 500);
  CHECK(std::get<SignalOp>(parse_ok(R"({"id":4,"op":"signal","sessionId":"p","signal":"int"})").op).signal == Signal::sigint);
  CHECK(std::get<CloseOp>(parse_ok(R"({"id":5,"op":"close","sessionId":"p"})").op).session_id == "p");
  CHECK(std::holds_alternative<ListOp>(parse_ok(R"({"id":6,"op":"list"})").op));
  CHECK(std::holds_alternative<ActivityOp>(parse_ok(R"({"id":7,"op":"activity"})").op));
  CHECK(std::holds_alternative<DisposeOwnerOp>(parse_ok(R"({"id":8,"op":"disposeOwner","owner":"x"})").op));
  CHECK(std::holds_alternative<ShutdownOp>(parse_ok(R"({"id":null,"op":"shutdown"})").op));
  CHECK(std::holds_alternative<HelloOp>(parse_ok(R"({"id":1,"op":"hello"})").op));
  CHECK(parse_bad(R"({"id":1,"op":"hello","version":2})").error->code == Code::INVALID_ARGUMENT);
}

TEST_CASE("bad lines: an INVALID_ARGUMENT each, with the id when it could be read") {
  CHECK(parse_bad("not json").id.is_null());
  CHECK(parse_bad("[1,2]").id.is_null());
  CHECK(parse_bad(R"({"op":"list"})").id.is_null());
  CHECK(parse_bad(R"({"id":1})").id.token() == "1");
  CHECK(parse_bad(R"({"id":1,"op":"nope"})").error->message == "unknown op \"nope\"");
  CHECK(parse_bad(R"({"id":1,"op":7})").id.token() == "1");
  // Strict fields: one unknown field refuses the request, naming it and the valid ones.
  CHECK(parse_bad(R"({"id":2,"op":"send","sessionId":"p","text":"x","timeout":5})").error->message ==
        "unknown field \"timeout\" for op \"send\" (valid: id, op, owner, sessionId, text, keys, submit, timeoutMs, idleMs, until, background)");
  CHECK(parse_bad(R"({"id":2,"op":"list","sessionId":"p"})").error->message ==
        "unknown field \"sessionId\" for op \"list\" (valid: id, op, owner)");
  CHECK(parse_bad(R"({"id":2,"op":"open","type":"shell","sandox":"read-only"})").error->message ==
        "unknown field \"sandox\" for op \"open\" (valid: id, op, owner, type, name, cwd, shell, rc, history, terminal, sandbox, network, linger, limits, record)");
  CHECK(parse_bad(R"({"id":"c","op":"cancel","sendId":1,"session":"p"})").id.token() == "\"c\"");
  parse_ok(R"({"id":2,"op":"shutdown","owner":"a"})");
  // Bad bytes in a string: refused under the request's own id, not null.
  const std::string bad_utf8 = "{\"id\":41,\"op\":\"send\",\"sessionId\":\"p\",\"text\":\"a\xff\xfe b\"}";
  CHECK(parse_bad(bad_utf8).id.token() == "41");
  CHECK(parse_bad(bad_utf8).error->message == "the request's strings hold invalid UTF-8 or a lone surrogate escape");
  CHECK(parse_bad(R"({"id":"s42","op":"send","sessionId":"p","text":"\ud800"})").id.token() == "\"s42\"");
  CHECK(parse_bad(R"({"id":43,"op":"send","sessionId":"p","text":"x\udc00y"})").id.token() == "43");
  CHECK(parse_bad("{\"id\":44,\"op\":\"open\",\"type\":\"shell\",\"name\":\"\xc3\"}").id.token() == "44");
  // A pair is one character, and an escaped backslash before "ud800" is no escape: both fine.
  CHECK(std::get<SendOp>(parse_ok(R"({"id":45,"op":"send","sessionId":"p","text":"\ud83d\ude00"})").op).request.text ==
        "\xF0\x9F\x98\x80");
  CHECK(std::get<SendOp>(parse_ok(R"({"id":46,"op":"send","sessionId":"p","text":"\\ud800"})").op).request.text ==
        "\\ud800");
  CHECK(parse_bad("{\"id\":47,\"op\":\"send\",\"text\":\"\xff\"").id.is_null());  // not JSON, bytes or not
  CHECK(parse_bad(R"({"id":2,"op":"send","sessionId":1,"text":"x"})").error->message ==
        "field \"sessionId\" must be a string");
  parse_bad(R"({"id":2,"op":"send","sessionId":"p","text":"x","submit":"yes"})");
  parse_bad(R"({"id":2,"op":"send","sessionId":"p","text":"x","idleMs":1.5})");
  parse_bad(R"({"id":2,"op":"read","sessionId":"p","offset":"1"})");
  parse_bad(R"({"id":2,"op":"signal","sessionId":"p","signal":"SIGUSR1"})");
  parse_bad(R"({"id":2,"op":"cancel"})");
  parse_bad(R"({"id":2,"op":"disposeOwner"})");
  parse_bad(R"({"id":2,"op":"list","owner":5})");
  parse_bad(R"({"id":2,"op":"open"})");
  parse_bad("{\"id\":1,\"op\":\"list\"");  // cut short
  // Deep nesting is rejected or parsed, never a crash.
  std::string deep(100000, '[');
  parse_bad(deep);
}

TEST_CASE("responses: shape, status, errors, caps") {
  CHECK(ok_response(RequestId("1"), Json::object()) == R"({"id":1,"ok":true,"result":{}})");
  const Error aggregate = make_error(Code::CLEANUP_FAILED, "failed to clean up PTY lifecycle",
                                     {make_error(Code::BACKEND_FAILED, "boom")});
  CHECK(error_response({}, make_error(Code::NO_SESSION)) ==
        R"({"id":null,"ok":false,"error":{"code":"NO_SESSION","message":"unknown PTY session ID"}})");
  CHECK(error_response(RequestId(R"("x")"), aggregate) ==
        R"({"id":"x","ok":false,"error":{"code":"CLEANUP_FAILED","message":"failed to clean up PTY lifecycle","errors":[{"code":"BACKEND_FAILED","message":"boom"}]}})");

  CHECK(encode_status({}).dump() == R"({"kind":"running"})");
  CHECK(encode_status(SessionStatus::exited_with_code(2)).dump() == R"({"kind":"exited","exitCode":2,"signal":null})");
  CHECK(encode_status(SessionStatus::exited_by_signal(9)).dump() == R"({"kind":"exited","exitCode":null,"signal":"SIGKILL"})");
  CHECK(encode_status(SessionStatus::lost("ssh exited 255: Connection refused")).dump() ==
        R"({"kind":"lost","reason":"ssh exited 255: Connection refused"})");
  CHECK(encode_status(SessionStatus::reconnecting("ssh killed by SIGKILL")).dump() ==
        R"({"kind":"reconnecting","reason":"ssh killed by SIGKILL"})");

  SessionSnapshot session;
  session.id = "pty-1";
  session.type = "shell";
  CHECK(encode_snapshot(session).dump() == R"({"sessionId":"pty-1","type":"shell","status":{"kind":"running"}})");
  session.name = "main";
  session.pid = 9;
  CHECK(encode_snapshot(session).dump() ==
        R"({"sessionId":"pty-1","name":"main","type":"shell","pid":9,"status":{"kind":"running"}})");

  SendResult sent;
  sent.viewport = std::string(100, 'x') + "\xC3\xA9";
  sent.wait_reason = WaitReason::timeout;
  auto full = encode_send(sent);
  CHECK(full["waitReason"] == "timeout");
  CHECK(full["truncated"] == false);
  CHECK_FALSE(full.contains("omittedLines"));
  // The backend cut it: the viewport as it came, and what was left out beside it.
  sent.truncated = true;
  sent.omitted_lines = 3;
  sent.omitted_bytes = 42;
  auto cut = encode_send(sent);
  CHECK(cut["viewport"] == sent.viewport);
  CHECK(cut["truncated"] == true);
  CHECK(cut["omittedLines"] == 3);
  CHECK(cut["omittedBytes"] == 42);
  sent.truncated = false;
  // Not at the shell's prompt: exitCode and cwd are there, and null.
  CHECK(full["exitCode"].is_null());
  CHECK(full["cwd"].is_null());
  CHECK(full["inputHidden"] == false);
  CHECK(full["evidence"] == "none");
  sent.viewport = "ok\n";
  sent.wait_reason = WaitReason::stdin_read;
  sent.evidence = Evidence::prompt_marks;
  sent.exit_code = 7;
  sent.cwd = "/usr/share";
  CHECK(encode_send(sent).dump() ==
        R"({"viewport":"ok\n","waitReason":"stdin_read","sessionStatus":{"kind":"running"},)"
        R"("truncated":false,"exitCode":7,"cwd":"/usr/share","inputHidden":false,"evidence":"prompt_marks"})");
  // A line not run, and a cancel that took the text back: said only when so.
  SendResult queued;
  queued.line_state = LineState::queued;
  queued.queued_behind = QueuedBehind{4242, "sleep 30"};
  auto q = encode_send(queued);
  CHECK(q["lineState"] == "queued");
  CHECK(q["queuedBehind"].dump() == R"({"pid":4242,"command":"sleep 30"})");
  CHECK_FALSE(q.contains("takenBackBytes"));
  queued.line_state = LineState::relayed;
  CHECK(encode_send(queued)["lineState"] == "relayed");
  SendResult taken;
  taken.taken_back_bytes = 21;
  taken.line_state = LineState::continuation;
  auto t = encode_send(taken);
  CHECK(t["takenBackBytes"] == 21);
  CHECK(t["lineState"] == "continuation");
  CHECK_FALSE(t.contains("queuedBehind"));

  ReadPage page;
  page.text = "a\n";
  page.total_lines = 1;
  page.line_end = 1;
  CHECK(encode_read(page, 100).dump() == R"({"text":"a\n","totalLines":1,"lineBegin":0,"lineEnd":1,"truncated":false})");
  CHECK(encode_output({"abc", true}, 100).dump() == R"({"delta":"abc","truncated":true})");
  SignalResult signal;
  signal.target_pgid = 77;
  CHECK(encode_signal(signal).dump() == R"({"delivered":true,"targetPgid":77})");
  // Invalid UTF-8 never makes serialize throw.
  CHECK_NOTHROW(ok_response(RequestId("1"), Json{{"text", std::string("\xFF")}}));
}

TEST_CASE("duplicate keys are refused, naming the key, under the id when it is clear") {
  // The parser would keep the last: this must never shut anything down.
  auto twice = parse_bad(R"({"id":9,"op":"list","op":"shutdown"})");
  CHECK(twice.id.token() == "9");
  CHECK(twice.error->message == "duplicate key \"op\"");
  // The same key spelt with an escape is the same key.
  CHECK(parse_bad(R"({"id":9,"op":"list","\u006fp":"shutdown"})").error->message == "duplicate key \"op\"");
  CHECK(parse_bad(R"({"id":9,"op":"list","o\u0070":"shutdown"})").error->message == "duplicate key \"op\"");
  // Nested, inside an array, under the id: each found and named where it is.
  CHECK(parse_bad(R"({"id":9,"op":"open","type":"shell","limits":{"pids":1,"pids":2}})").error->message ==
        "duplicate key \"pids\" in \"limits\"");
  CHECK(parse_bad(R"({"id":9,"op":"send","sessionId":"p","keys":[{"a":1,"a":2}]})").error->message ==
        "duplicate key \"a\" in \"keys\"");
  CHECK(parse_bad(R"({"id":1,"id":2,"op":"list"})").id.is_null());
  CHECK(parse_bad(R"({"id":{"k":1,"k":2},"op":"list"})").id.is_null());
  // Keys that only look alike are two keys; a key-like string value is no key.
  parse_ok(R"({"id":9,"op":"send","sessionId":"p","text":"op"})");
  parse_ok(R"({"id":{"op":1},"op":"list"})");
  parse_ok(R"({"id":["op","op"],"op":"list"})");
  parse_ok(R"({"id":9,"op":"open","type":"shell","name":"\"op\":1,\"op\":2"})");
}

TEST_CASE("an object of more keys, or more levels, than any request needs is refused unparsed") {
  std::string many = R"({"id":"wide","op":"list","x":{)";
  for (std::size_t i = 0; i < tool::kMaxKeysPerObject; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  const auto at_cap = parse_bad(many + "}}");
  CHECK(at_cap.error->message == "unknown field \"x\" for op \"list\" (valid: id, op, owner)");
  const auto over = parse_bad(many + R"(,"one-more":1}})");
  CHECK(over.id.token() == R"("wide")");
  CHECK(over.error->message == "an object holds more than 1024 keys");
  // Keys of sibling objects are not added up; an array's items are no keys.
  std::string siblings = R"({"id":1,"op":"list","x":[)";
  for (int i = 0; i < 2000; ++i) siblings += std::string(i ? "," : "") + R"({"a":1,"b":2})";
  CHECK(parse_bad(siblings + "]}").error->message.rfind("unknown field", 0) == 0);
  // Depth: 64 levels are parsed, 65 refused unparsed, under the id.
  const auto nested = [](std::size_t levels) {
    return R"({"id":7,"op":"list","x":)" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  CHECK(parse_bad(nested(64)).error->message.rfind("unknown field", 0) == 0);
  CHECK(parse_bad(nested(65)).error->message == "nested deeper than 64 levels");
  CHECK(parse_bad(nested(65)).id.token() == "7");
}

TEST_CASE("ids come back as they were sent, byte for byte") {
  for (const char* token : {"9007199254740993", "1e400", "-0", "12345678901234567890123", "1.50", "-1E-7",
                            R"("\u0041b\\")", R"("é")", "true", R"({"b": [1, 2.0]})", "[ ]"}) {
    const std::string line = std::string(R"({"id":)") + token + R"(,"op":"list"})";
    const Request request = parse_ok(line);
    CHECK(request.id.token() == token);
    CHECK(ok_response(request.id, Json::object()) == std::string(R"({"id":)") + token + R"(,"ok":true,"result":{}})");
  }
  CHECK(parse_bad(R"({"id":  1e400 ,"op":"nope"})").id.token() == "1e400");
  // A number past a double's range anywhere but the id: refused under the id, never read as 0.
  auto huge = parse_bad(R"({"id":-1e999,"op":"read","sessionId":"p","offset":1e400})");
  CHECK(huge.id.token() == "-1e999");
  CHECK(huge.error->message == "a number in the request is out of range");
  CHECK(parse_bad(R"({"id":1,"op":"read","sessionId":"p\u0000","offset":-1e400})").id.token() == "1");
  // A cancel names its send by the same id in another spelling.
  CHECK(parse_ok(R"({"id":1,"op":"cancel","sendId":"\u0041"})").op.index() == Op(CancelOp{}).index());
  CHECK(std::get<CancelOp>(parse_ok(R"({"id":1,"op":"cancel","sendId":"\u0041"})").op).send_id.key() ==
        RequestId(R"("A")").key());
  CHECK(RequestId("1").key() != RequestId(R"("1")").key());
  CHECK(RequestId("12345678901234567890123").key() != RequestId("12345678901234567890124").key());
}

TEST_CASE("numbers and null: one rule, as on MCP (a whole float is an integer; null is absent)") {
  // A whole number written as a float is that integer, on every integer field.
  const auto send = std::get<SendOp>(
      parse_ok(R"({"id":1,"op":"send","sessionId":"p","text":"x","timeoutMs":5000.0,"idleMs":7e2})").op);
  CHECK(send.request.timeout->count() == 5000);
  CHECK(send.request.idle->count() == 700);
  const auto resize = std::get<ResizeOp>(parse_ok(R"({"id":1,"op":"resize","sessionId":"p","rows":30.0,"cols":100})").op);
  CHECK(resize.rows == 30);
  const auto read = std::get<ReadOp>(parse_ok(R"({"id":1,"op":"read","sessionId":"p","offset":2.0,"count":3.0})").op);
  CHECK(read.request.offset == 2);
  CHECK(read.request.count == 3);
  CHECK(std::get<OpenOp>(parse_ok(R"({"id":1,"op":"open","type":"shell","linger":5.0})").op).options.at("linger") == "5");
  // Anything else is no integer.
  CHECK(parse_bad(R"({"id":1,"op":"send","sessionId":"p","timeoutMs":1e300})").error->message ==
        "field \"timeoutMs\" must be an integer");
  CHECK(parse_bad(R"({"id":1,"op":"send","sessionId":"p","timeoutMs":"5"})").error->message ==
        "field \"timeoutMs\" must be an integer");
  CHECK(parse_bad(R"({"id":1,"op":"open","type":"shell","linger":1.5})").error->message ==
        "field \"linger\" must be whole seconds 0..604800");
  CHECK(parse_bad(R"({"id":1,"op":"open","type":"shell","linger":604801})").error->message ==
        "field \"linger\" must be whole seconds 0..604800");
  // null is a field left out: an optional one takes its default, a required one is missing.
  const auto nulls = std::get<SendOp>(
      parse_ok(R"({"id":1,"op":"send","sessionId":"p","text":null,"keys":null,"timeoutMs":null})").op);
  CHECK(nulls.request.text.empty());
  CHECK_FALSE(nulls.request.timeout);
  CHECK(parse_bad(R"({"id":1,"op":"send","sessionId":null,"text":"x"})").error->message ==
        "missing field \"sessionId\"");
  CHECK(parse_bad(R"({"id":1,"op":"open","type":null})").error->message == "missing field \"type\"");
  // A sendId is a request id as the send wrote it: null names a send whose id was null.
  CHECK(std::get<CancelOp>(parse_ok(R"({"id":2,"op":"cancel","sendId":null})").op).send_id.token() == "null");
}

TEST_CASE("open's limits: an object of pids, memory and cpu; anything else refused naming the member") {
  const auto open = std::get<OpenOp>(
      parse_ok(R"({"id":1,"op":"open","type":"shell","limits":{"pids":64,"memory":1048576.0,"cpu":0.5}})").op);
  CHECK(open.limits.pids == 64u);
  CHECK(open.limits.memory == 1048576u);
  CHECK(open.limits.cpu == 0.5);
  CHECK_FALSE(std::get<OpenOp>(parse_ok(R"({"id":1,"op":"open","type":"shell","limits":{"pids":null}})").op).limits.any());
  CHECK(parse_bad(R"({"id":1,"op":"open","type":"shell","limits":64})").error->message ==
        "field \"limits\" must be an object: {\"pids\": N, \"memory\": BYTES, \"cpu\": F}");
  CHECK(parse_bad(R"({"id":1,"op":"open","type":"shell","limits":{"pids":0}})").error->message ==
        "field \"limits.pids\" must be a positive integer");
  CHECK(parse_bad(R"({"id":1,"op":"open","type":"shell","limits":{"memory":1.5}})").error->message ==
        "field \"limits.memory\" must be a positive integer");
  CHECK(parse_bad(R"({"id":1,"op":"open","type":"shell","limits":{"cpu":"1"}})").error->message ==
        "field \"limits.cpu\" must be a positive number");
  CHECK(parse_bad(R"({"id":1,"op":"open","type":"shell","limits":{"threads":9}})").error->message ==
        "field \"limits.threads\" is no limit (pids, memory, cpu)");
}

TEST_CASE("limitHit: in a list entry, with the victim when known") {
  SessionSnapshot s;
  s.id = "pty-1";
  s.type = "shell";
  CHECK_FALSE(encode_snapshot(s).contains("limitHit"));
  s.limit_hit = LimitHit{LimitKind::pids};
  CHECK(encode_snapshot(s)["limitHit"].dump() == R"({"kind":"pids"})");
  s.limit_hit = LimitHit{LimitKind::memory, 1234, "python3"};
  CHECK(encode_snapshot(s)["limitHit"].dump() == R"({"kind":"memory","pid":1234,"command":"python3"})");
}
