// dshpty-repl's two faces (TextSession for text mode, JsonServer for --json) over one
// engine, a real Service and the scripted backend: owners, naming, `use`, overlapping
// requests, cancel/output by send id, disposal. No shell, no terminal.
#include <doctest/doctest.h>

#include <ev.h>

#include <memory>
#include <string>
#include <vector>

#include "dshpty/scripted.hpp"
#include "dshpty/service.hpp"
#include "engine.hpp"
#include "json_server.hpp"
#include "loop_turns.hpp"
#include "text_session.hpp"

using namespace dshpty;
using namespace dshpty::repl;
using Json = json_protocol::Json;

namespace {

using test::run_until;

struct Fixture {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  std::shared_ptr<ScriptedBackend> backend = std::make_shared<ScriptedBackend>(loop, "shell");
  std::unique_ptr<Service> service = std::make_unique<Service>(loop);
  std::unique_ptr<engine::Engine> engine = std::make_unique<engine::Engine>(*service, engine::Settings{.max_result_bytes = 4096});
  bool disposed = false;

  Fixture() { REQUIRE(service->register_backend(backend)); }
  ~Fixture() {
    // A second dispose joins the first or completes at once: either way we wait for it.
    service->dispose([this](Status) { disposed = true; });
    run_until(loop, [&] { return disposed; });
    run_until(loop, [&] { return backend->pending() == 0; }, 1000);
    engine.reset();
    service.reset();
    backend.reset();
    ev_loop_destroy(loop);
  }
};

struct TextFixture : Fixture {
  std::string printed;
  TextSession text{*engine, [this](std::string s) { printed += s; }};

  // Runs one line to completion and returns what it printed.
  std::string run(const std::string& line) {
    printed.clear();
    bool done = false;
    text.run(line, [&] { done = true; });
    REQUIRE(run_until(loop, [&] { return done; }));
    return printed;
  }
};

}  // namespace

TEST_CASE("text: open, list, use, send, read, signal, close by id and by name") {
  TextFixture f;
  f.backend->spawns().set_default([] {
    ScriptedSpawn spawn;
    spawn.session.motd = "";
    spawn.session.pid = 4242;
    return spawn;
  }());
  CHECK(f.run("list") == "(no terminal sessions)\n");
  CHECK(f.run("open shell main") == "started terminal session pty-1 (main) [type: shell]\n(no startup output)\n");
  CHECK(f.run("open shell") == "started terminal session pty-2 [type: shell]\n(no startup output)\n");
  CHECK(f.run("list") == "pty-1 (main) [shell] running pid=4242\npty-2 [shell] running pid=4242\n");
  CHECK(f.run("open shell main").rfind("error: DUPLICATE_NAME: ", 0) == 0);

  SendResult result;
  result.viewport = "hello\n";
  result.wait_reason = WaitReason::stdin_read;
  f.backend->every_session().sends.set_default(ScriptedSend::with(ScriptedStep::succeed(), result));
  CHECK(f.run("send main echo hello") == "hello\n[wait: stdin_read]\n[session: running]\n");
  REQUIRE(f.backend->session("pty-1")->sends.size() == 1);
  CHECK(f.backend->session("pty-1")->sends[0].text == "echo hello");
  CHECK(f.run("send pty-2 --no-submit x") == "hello\n[wait: stdin_read]\n[session: running]\n");
  CHECK(f.backend->session("pty-2")->sends[0].submit == false);

  CHECK(f.run("send nosuch ls") == "error: NO_SESSION: unknown PTY session ID\n");
  CHECK(f.run("use nosuch") == "error: NO_SESSION: unknown PTY session ID\n");
  CHECK(f.run("use") == "(no current terminal session)\n");
  CHECK(f.run("use main") == "using terminal session pty-1 (main)\n");
  CHECK(f.run("send ls -l") == "hello\n[wait: stdin_read]\n[session: running]\n");
  CHECK(f.backend->session("pty-1")->sends.back().text == "ls -l");

  CHECK(f.run("read") == "(no retained output)\n[lines: 0-0 of 0]\n");
  CHECK(f.run("read main -1").rfind("error: INVALID_ARGUMENT", 0) == 0);
  CHECK(f.run("signal SIGINT") == "delivered SIGINT to foreground process group 4242\n");
  CHECK(f.backend->session("pty-1")->signals == std::vector<Signal>{Signal::sigint});

  CHECK(f.run("close") == "closed terminal session pty-1\n");
  CHECK(f.run("use") == "(no current terminal session)\n");
  CHECK(f.run("close pty-1") == "error: NO_SESSION: unknown PTY session ID\n");
  CHECK(f.run("bogus").rfind("error: INVALID_ARGUMENT: unknown command", 0) == 0);
  CHECK(f.run("help").find("quit") != std::string::npos);
  CHECK(f.run("quit").empty());
  CHECK(f.text.quit_requested());

  int code = -1;
  f.text.shut_down([&](int c) { code = c; });
  REQUIRE(run_until(f.loop, [&] { return code != -1; }));
  CHECK(code == 0);
  CHECK(f.backend->all_processes_gone());
}

TEST_CASE("text: Ctrl-C cancels the live send; SEND_ACTIVE is not reachable from one prompt") {
  TextFixture f;
  f.backend->spawns().set_default(ScriptedSpawn{});
  f.run("open shell main");
  auto gate = ScriptedGate::make();
  ScriptedSend send = ScriptedSend::with(ScriptedStep::gated(gate));
  send.settle_on_cancel = true;
  send.cancel_wait_reason = WaitReason::stdin_read;
  f.backend->session_script("pty-1").sends.push(send);

  bool done = false;
  f.printed.clear();
  f.text.run("send main sleep 30", [&] { done = true; });
  CHECK(f.text.busy());
  run_until(f.loop, [] { return false; }, 50);
  CHECK_FALSE(done);
  CHECK(f.text.interrupt());
  REQUIRE(run_until(f.loop, [&] { return done; }));
  CHECK(f.printed == "(no new output)\n[wait: stdin_read]\n[session: running]\n");
  CHECK(f.backend->session("pty-1")->cancel_calls == 1);
  CHECK_FALSE(f.text.interrupt());  // at the prompt: nothing to do
}

TEST_CASE("text: Ctrl-C aborts a pending open") {
  TextFixture f;
  auto gate = ScriptedGate::make();
  f.backend->spawns().push(ScriptedSpawn::with(ScriptedStep::gated(gate)));
  bool done = false;
  f.text.run("open shell main", [&] { done = true; });
  CHECK(f.text.interrupt());
  REQUIRE(run_until(f.loop, [&] { return done; }));
  CHECK(f.printed == "error: ABORTED: open interrupted (Ctrl-C)\n");
}

namespace {
struct JsonFixture : Fixture {
  std::vector<Json> responses;
  int finished = -1;
  JsonServer server{*engine,
                    {[this](std::string line) { responses.push_back(Json::parse(line)); },
                     [this](int code) { finished = code; }}};

  // Sends lines, then runs the loop until `count` responses in all have come.
  void expect(std::size_t count) { REQUIRE(run_until(loop, [&] { return responses.size() >= count; })); }
  const Json& response(const Json& id) {
    for (const auto& r : responses)
      if (r["id"] == id) return r;
    FAIL("no response with id " << id.dump());
    static Json none;
    return none;
  }
};
}  // namespace

TEST_CASE("json: overlapping send, output, read and cancel by send id") {
  JsonFixture f;
  f.server.handle_line(R"({"id":1,"op":"open","type":"shell","name":"main"})");
  f.expect(1);
  CHECK(f.response(1)["result"]["sessionId"] == "pty-1");
  CHECK(f.response(1)["result"]["motd"] == "scripted\n");

  auto gate = ScriptedGate::make();
  ScriptedSend send = ScriptedSend::with(ScriptedStep::gated(gate));
  send.output = {{"partial", false}};
  send.settle_on_cancel = true;
  f.backend->session_script("pty-1").sends.push(send);

  f.server.handle_line(R"({"id":"s1","op":"send","sessionId":"pty-1","text":"sleep 30"})");
  f.server.handle_line(R"({"id":"s2","op":"send","sessionId":"pty-1","text":"again"})");
  f.server.handle_line(R"({"id":3,"op":"output","sendId":"s1"})");
  f.server.handle_line(R"({"id":4,"op":"read","sessionId":"pty-1"})");
  f.server.handle_line(R"({"id":5,"op":"list"})");
  f.server.handle_line(R"({"id":6,"op":"cancel","sendId":"s1"})");
  f.server.handle_line(R"({"id":7,"op":"cancel","sendId":"never"})");
  f.expect(8);
  CHECK(f.response("s2")["error"]["code"] == "SEND_ACTIVE");
  CHECK(f.response(3)["result"] == Json::parse(R"({"delta":"partial","truncated":false,"nextOffset":0,"droppedBytes":0,"done":false})"));
  CHECK(f.response(4)["ok"] == true);
  CHECK(f.response(5)["result"]["sessions"].size() == 1);
  CHECK(f.response(6)["result"]["cancelled"] == true);
  CHECK(f.response(7)["error"]["code"] == "INVALID_ARGUMENT");
  CHECK(f.response("s1")["result"]["waitReason"] == "stdin_read");

  // A late cancel of a settled send: false, not an error.
  f.server.handle_line(R"({"id":8,"op":"cancel","sendId":"s1"})");
  f.expect(9);
  CHECK(f.response(8)["result"]["cancelled"] == false);
}

TEST_CASE("json: owners by label; disposeOwner gives the label a fresh owner") {
  JsonFixture f;
  f.server.handle_line(R"({"id":1,"op":"open","type":"shell","owner":"a"})");
  f.expect(1);
  f.server.handle_line(R"({"id":2,"op":"read","sessionId":"pty-1","owner":"b"})");
  f.server.handle_line(R"({"id":3,"op":"activity","owner":"a"})");
  f.server.handle_line(R"({"id":4,"op":"activity","owner":"b"})");
  f.server.handle_line(R"({"id":5,"op":"list","owner":"b"})");
  f.expect(5);
  CHECK(f.response(2)["error"]["code"] == "FOREIGN_SESSION");
  CHECK(f.response(2)["error"]["message"] == "PTY session ID belongs to another agent");
  CHECK(f.response(3)["result"]["active"] == true);
  CHECK(f.response(4)["result"]["active"] == false);
  CHECK(f.response(5)["result"]["sessions"].empty());

  f.server.handle_line(R"({"id":6,"op":"disposeOwner","owner":"a"})");
  f.server.handle_line(R"({"id":7,"op":"list","owner":"a"})");
  f.expect(7);
  CHECK(f.response(7)["result"]["sessions"].empty());  // a new owner already
  f.expect(7);
  REQUIRE(run_until(f.loop, [&] { return f.responses.size() == 7; }));
  f.server.handle_line(R"({"id":8,"op":"read","sessionId":"pty-1","owner":"a"})");
  f.expect(8);
  CHECK(f.response(6)["result"] == Json::object());
  CHECK(f.response(8)["error"]["code"] == "NO_SESSION");
  CHECK(f.backend->all_processes_gone());
  f.server.handle_line(R"({"id":9,"op":"disposeOwner","owner":"never-used"})");
  f.expect(9);
  CHECK(f.response(9)["ok"] == true);
}

TEST_CASE("json: bad lines each get INVALID_ARGUMENT and serving goes on") {
  JsonFixture f;
  f.server.handle_line("this is not json");
  f.server.handle_line(R"({"id":1,"op":"frobnicate"})");
  f.server.handle_line(R"({"id":2,"op":"send","sessionId":"pty-1","txt":"x"})");
  f.server.handle_line(R"({"id":3,"op":"read","sessionId":7})");
  f.server.handle_overlong_line();
  f.server.handle_line("   ");  // blank: no response
  f.server.handle_line(R"({"id":4,"op":"list"})");
  f.expect(6);
  for (std::size_t i = 0; i < 5; ++i) CHECK(f.responses[i]["error"]["code"] == "INVALID_ARGUMENT");
  CHECK(f.responses[0]["id"].is_null());
  CHECK(f.responses[4]["id"].is_null());
  CHECK(f.response(4)["ok"] == true);
}

TEST_CASE("json: shutdown waits for every request, then answers and finishes") {
  JsonFixture f;
  f.server.handle_line(R"({"id":1,"op":"open","type":"shell"})");
  f.expect(1);
  auto gate = ScriptedGate::make();
  f.backend->session_script("pty-1").sends.push(ScriptedSend::with(ScriptedStep::gated(gate)));
  f.server.handle_line(R"({"id":2,"op":"send","sessionId":"pty-1","text":"x"})");
  f.server.handle_line(R"({"id":3,"op":"shutdown"})");
  CHECK(f.server.shutting_down());
  REQUIRE(run_until(f.loop, [&] { return f.finished != -1; }));
  CHECK(f.finished == 0);
  REQUIRE(f.responses.size() == 3);
  CHECK(f.responses.back()["id"] == 3);  // last, after the settled send
  CHECK(f.responses.back()["result"] == Json::object());
  CHECK(f.backend->all_processes_gone());
}

TEST_CASE("json: a send right after a cancel waits for the cancelled send, then runs (as on MCP)") {
  JsonFixture f;
  f.server.handle_line(R"({"id":1,"op":"open","type":"shell","name":"main"})");
  f.expect(1);
  auto gate = ScriptedGate::make();
  ScriptedSend send = ScriptedSend::with(ScriptedStep::gated(gate));
  send.settle_on_cancel = true;
  f.backend->session_script("pty-1").sends.push(send);

  f.server.handle_line(R"({"id":"s1","op":"send","sessionId":"pty-1","text":"sleep 30"})");
  f.server.handle_line(R"({"id":2,"op":"cancel","sendId":"s1"})");
  f.server.handle_line(R"({"id":"s2","op":"send","sessionId":"pty-1","text":"echo after"})");
  f.expect(4);
  CHECK(f.response(2)["result"]["cancelled"] == true);
  CHECK(f.response("s1")["result"]["waitReason"] == "stdin_read");
  CHECK(f.response("s2")["ok"] == true);
}

TEST_CASE("json: two owners' jobs under one request id each run and each show their own result") {
  JsonFixture f;
  f.server.handle_line(R"({"id":1,"op":"open","type":"shell","owner":"alice"})");
  f.server.handle_line(R"({"id":2,"op":"open","type":"shell","owner":"bob"})");
  f.expect(2);
  auto ends_with = [&](const std::string& id, const std::string& viewport) {
    SendResult result;
    result.viewport = viewport;
    result.wait_reason = WaitReason::stdin_read;
    f.backend->session_script(id).sends.push(ScriptedSend::with(ScriptedStep::succeed(), result));
  };
  ends_with("pty-1", "alice's\n");
  ends_with("pty-1", "alice only\n");
  ends_with("pty-2", "bob's\n");
  f.server.handle_line(R"({"id":"dev","op":"send","owner":"alice","sessionId":"pty-1","background":true,"text":"a"})");
  f.expect(3);
  REQUIRE(run_until(f.loop, [&] { return f.engine->pending() == 0; }));
  f.server.handle_line(R"({"id":"only-a","op":"send","owner":"alice","sessionId":"pty-1","background":true,"text":"b"})");
  f.server.handle_line(R"({"id":"dev","op":"send","owner":"bob","sessionId":"pty-2","background":true,"text":"c"})");
  f.expect(5);
  CHECK(f.responses[3]["result"] == Json::parse(R"({"job":"only-a","sessionId":"pty-1"})"));
  CHECK(f.responses[4]["result"] == Json::parse(R"({"job":"dev","sessionId":"pty-2"})"));
  // Let every job end, then read each owner's "dev".
  REQUIRE(run_until(f.loop, [&] { return f.engine->pending() == 0; }));
  f.server.handle_line(R"({"id":10,"op":"output","owner":"alice","sendId":"dev"})");
  f.server.handle_line(R"({"id":11,"op":"output","owner":"bob","sendId":"dev"})");
  f.server.handle_line(R"({"id":12,"op":"output","owner":"bob","sendId":"only-a"})");
  f.server.handle_line(R"({"id":13,"op":"stop","owner":"bob","sendId":"only-a"})");
  f.server.handle_line(R"({"id":14,"op":"cancel","owner":"bob","sendId":"only-a"})");
  f.server.handle_line(R"({"id":15,"op":"output","owner":"bob","sendId":"only-b"})");
  f.expect(11);
  CHECK(f.response(10).at("result").at("result").at("viewport") == "alice's\n");
  CHECK(f.response(11).at("result").at("result").at("viewport") == "bob's\n");
  for (int id : {12, 13, 14}) {
    INFO(id);
    CHECK(f.response(id)["error"]["code"] == "FOREIGN_SESSION");
    CHECK(f.response(id)["error"]["message"] == R"(send "only-a" belongs to another owner)");
  }
  CHECK(f.response(15)["error"]["code"] == "INVALID_ARGUMENT");
}
