// dshpty-mcp's pure parts: JSON-RPC message parsing and writing, version negotiation, the
// tool catalog and the checking of a call's arguments.
#include <doctest/doctest.h>

#include <string>

#include "rpc.hpp"
#include "field_table.hpp"
#include "tool_catalog.hpp"

using namespace dshpty;
using namespace dshpty::mcp;

TEST_CASE("rpc::parse: requests, notifications, replies, and the error each bad line gets") {
  auto request = rpc::parse(R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})");
  REQUIRE(std::holds_alternative<rpc::Request>(request));
  CHECK(std::get<rpc::Request>(request).id.token() == "7");
  CHECK(std::get<rpc::Request>(request).params.is_null());

  auto note = rpc::parse(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}})");
  REQUIRE(std::holds_alternative<rpc::Notification>(note));
  CHECK(std::get<rpc::Notification>(note).params["requestId"] == "a");

  CHECK(std::holds_alternative<rpc::Reply>(rpc::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})")));

  auto code = [](std::string_view line) {
    auto m = rpc::parse(line);
    REQUIRE(std::holds_alternative<rpc::Invalid>(m));
    return std::get<rpc::Invalid>(m).code;
  };
  CHECK(code("{nope") == rpc::kParseError);
  CHECK(code("\xff\xfe") == rpc::kParseError);
  CHECK(code(R"({"jsonrpc":"1.0","id":1,"method":"ping"})") == rpc::kInvalidRequest);
  CHECK(code(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})") == rpc::kInvalidRequest);
  CHECK(code(R"({"jsonrpc":"2.0","id":{},"method":"ping"})") == rpc::kInvalidRequest);
  CHECK(code(R"({"jsonrpc":"2.0","id":1,"method":3})") == rpc::kInvalidRequest);
  CHECK(code(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})") == rpc::kInvalidRequest);
  // The id is echoed when it could be read.
  auto bad = rpc::parse(R"({"jsonrpc":"2.0","id":"x","method":3})");
  CHECK(std::get<rpc::Invalid>(bad).id.token() == R"("x")");
}

TEST_CASE("rpc::parse: ids as sent, duplicate keys refused, batches split into their items") {
  for (const char* token : {"9007199254740993", "-0", "12345678901234567890123", R"("\u0041")"}) {
    auto m = rpc::parse(std::string(R"({"jsonrpc":"2.0","id":)") + token + R"(,"method":"ping"})");
    REQUIRE(std::holds_alternative<rpc::Request>(m));
    CHECK(std::get<rpc::Request>(m).id.token() == token);
    CHECK(rpc::result(std::get<rpc::Request>(m).id, Json::object()) ==
          std::string(R"({"id":)") + token + R"(,"jsonrpc":"2.0","result":{}})");
  }
  // Not an integer: refused, as before, whatever its size.
  for (const char* token : {"1e400", "1.0", "-1E2", "true", "[1]"}) {
    auto m = rpc::parse(std::string(R"({"jsonrpc":"2.0","id":)") + token + R"(,"method":"ping"})");
    REQUIRE(std::holds_alternative<rpc::Invalid>(m));
    CHECK(std::get<rpc::Invalid>(m).code == rpc::kInvalidRequest);
  }
  auto invalid = [](std::string_view line) {
    auto m = rpc::parse(line);
    REQUIRE(std::holds_alternative<rpc::Invalid>(m));
    return std::get<rpc::Invalid>(m);
  };
  auto top = invalid(R"({"jsonrpc":"2.0","id":3,"method":"ping","method":"tools/list"})");
  CHECK(top.code == rpc::kInvalidRequest);
  CHECK(top.id.token() == "3");
  CHECK(top.message == "duplicate key \"method\"");
  auto nested = invalid(R"({"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"name":"terminal_send",)"
                        R"("arguments":{"session":"a","text":"ls","\u0074ext":"rm -rf ~"}}})");
  CHECK(nested.code == rpc::kInvalidParams);
  CHECK(nested.id.token() == R"("n")");
  CHECK(nested.message == "duplicate key \"text\" in \"params.arguments\"");
  CHECK(invalid(R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})").id.is_null());
  auto huge = invalid(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"terminal_read","arguments":{"session":"a","offset":1e400}}})");
  CHECK(huge.code == rpc::kInvalidParams);
  CHECK(huge.id.token() == "4");
  // Past the bounds of a request's shape: refused unparsed, under the id it starts with.
  const auto deep = invalid(R"({"jsonrpc":"2.0","id":"d","method":"ping","params":{"x":)" + std::string(70, '[') +
                            std::string(70, ']') + "}}");
  CHECK(deep.code == rpc::kInvalidRequest);
  CHECK(deep.id.token() == R"("d")");
  CHECK(deep.message == "nested deeper than 64 levels");
  // A notification's params: dropped, no answer and no effect.
  CHECK(std::holds_alternative<rpc::Reply>(
      rpc::parse(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}})")));
  auto cancelled = rpc::parse(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345678901234567890123}})");
  REQUIRE(std::holds_alternative<rpc::Notification>(cancelled));
  CHECK(std::get<rpc::Notification>(cancelled).request_id.token() == "12345678901234567890123");

  auto batch = rpc::parse(R"( [ {"jsonrpc":"2.0","id":1,"method":"ping"} , 5, [], "x\"]" ] )");
  REQUIRE(std::holds_alternative<rpc::Batch>(batch));
  CHECK(std::get<rpc::Batch>(batch).items ==
        std::vector<std::string>{R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "5", "[]", R"("x\"]")"});
  CHECK(std::get<rpc::Batch>(rpc::parse("[]")).items.empty());
}

TEST_CASE("rpc::serialize never throws on bytes that are not UTF-8") {
  const std::string text = rpc::serialize(rpc::notification("m", Json{{"message", std::string("a\xff" "b")}}));
  CHECK(text == "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"message\":\"a\xef\xbf\xbd" "b\"}}");
}

TEST_CASE("negotiate_version: a served revision as asked, anything else the newest") {
  CHECK(negotiate_version("2025-06-18") == "2025-06-18");
  CHECK(negotiate_version("2025-03-26") == "2025-03-26");
  CHECK(negotiate_version("2024-11-05") == "2024-11-05");
  CHECK(negotiate_version("2025-11-25") == "2025-11-25");
  CHECK(negotiate_version("2099-01-01") == "2025-11-25");
  CHECK(negotiate_version(Json()) == "2025-11-25");
  CHECK(negotiate_version(5) == "2025-11-25");
}

TEST_CASE("tool_list: eight tools, closed object schemas whose required names exist") {
  const Json tools = tool_list();
  REQUIRE(tools.size() == 8);
  for (const auto& tool : tools) {
    const Json& schema = tool["inputSchema"];
    CHECK(schema["type"] == "object");
    CHECK(schema["additionalProperties"] == false);
    for (const auto& name : schema.value("required", Json::array())) CHECK(schema["properties"].contains(name));
  }
}

TEST_CASE("tool_list: terminal_open's type names the remote backends there are") {
  const auto type_description = [](const Json& tools) {
    return tools[0]["inputSchema"]["properties"]["type"]["description"].get<std::string>();
  };
  CHECK(tool_list()[0]["name"] == "terminal_open");
  CHECK(type_description(tool_list()).find("Also") == std::string::npos);
  const std::string with_remotes = type_description(tool_list({"shell", "box", "pod"}));
  CHECK(with_remotes.find("Also \"box\", \"pod\": a shell on another machine") != std::string::npos);
  CHECK(with_remotes.find("lost: REASON") != std::string::npos);
}

TEST_CASE("parse_tool_call: arguments into requests; every mistake an INVALID_ARGUMENT") {
  CHECK_FALSE(parse_tool_call("terminal_teleport", Json::object()).has_value());

  auto send = parse_tool_call("terminal_send", Json{{"session", "main"}, {"text", "ls"}, {"timeout_ms", 5000.0}});
  REQUIRE(send);
  REQUIRE(*send);
  const auto& call = std::get<SendCall>(send->value());
  CHECK(call.session == "main");
  CHECK(call.request.submits());
  CHECK(call.request.timeout->count() == 5000);

  // No text: a wait for more output, no Enter.
  auto wait = parse_tool_call("terminal_send", Json{{"session", "main"}});
  CHECK_FALSE(std::get<SendCall>(wait->value()).request.submits());

  // Keys alone: no Enter; with text: Enter after both.
  auto keys = parse_tool_call("terminal_send", Json{{"session", "main"}, {"keys", {"Down", "Enter"}}});
  REQUIRE(keys);
  REQUIRE(*keys);
  CHECK(std::get<SendCall>(keys->value()).request.keys == std::vector<std::string>{"Down", "Enter"});
  CHECK_FALSE(std::get<SendCall>(keys->value()).request.submits());
  auto resize = parse_tool_call("terminal_resize", Json{{"session", "main"}, {"rows", 30}, {"cols", 100}});
  REQUIRE(resize);
  REQUIRE(*resize);
  CHECK(std::get<ResizeCall>(resize->value()).rows == 30);
  CHECK(std::get<ResizeCall>(resize->value()).cols == 100);
  auto screen = parse_tool_call("terminal_read", Json{{"session", "main"}, {"screen", true}});
  REQUIRE(screen);
  REQUIRE(*screen);
  CHECK(std::get<ReadCall>(screen->value()).screen);

  auto open = parse_tool_call("terminal_open", Json());
  CHECK(std::get<OpenCall>(open->value()).request.type == "shell");
  auto remote = parse_tool_call("terminal_open", Json{{"type", "box"}, {"name", "b"}});
  CHECK(std::get<OpenCall>(remote->value()).request.type == "box");

  for (const auto& [name, arguments] :
       {std::pair{"terminal_send", Json{{"text", "x"}}}, std::pair{"terminal_send", Json{{"session", 1}}},
        std::pair{"terminal_send", Json{{"session", "a"}, {"idle_ms", 1.5}}},
        std::pair{"terminal_read", Json{{"session", "a"}, {"bogus", 1}}},
        std::pair{"terminal_read", Json{{"session", "a"}, {"offset", -1}}},
        std::pair{"terminal_signal", Json{{"session", "a"}, {"signal", "SIGSEGV"}}},
        std::pair{"terminal_list", Json{{"x", 1}}}, std::pair{"terminal_close", Json::array()},
        std::pair{"terminal_send", Json{{"session", "a"}, {"keys", "Enter"}}},
        std::pair{"terminal_send", Json{{"session", "a"}, {"keys", {"Enter", 1}}}},
        std::pair{"terminal_resize", Json{{"session", "a"}, {"rows", 30}}},
        std::pair{"terminal_resize", Json{{"session", "a"}, {"rows", 0}, {"cols", 80}}},
        std::pair{"terminal_read", Json{{"session", "a"}, {"screen", "yes"}}}}) {
    auto parsed = parse_tool_call(name, arguments);
    REQUIRE(parsed);
    REQUIRE_FALSE(*parsed);
    CHECK(parsed->error()->code == Code::INVALID_ARGUMENT);
  }
}

TEST_CASE("numbers and null: one rule, as on the JSON face (a whole float is an integer; null is absent)") {
  auto parse = [](const char* name, Json arguments) {
    auto parsed = parse_tool_call(name, arguments);
    REQUIRE(parsed);
    return std::move(*parsed);
  };
  auto read = parse("terminal_read", Json{{"session", "a"}, {"offset", 2.0}, {"count", nullptr}});
  REQUIRE(read);
  CHECK(std::get<ReadCall>(read.value()).request.offset == 2);
  auto open = parse("terminal_open", Json{{"linger", 5.0}, {"name", nullptr}});
  REQUIRE(open);
  CHECK(std::get<OpenCall>(open.value()).request.options.at("linger") == "5");
  CHECK_FALSE(std::get<OpenCall>(open.value()).request.name);
  auto resize = parse("terminal_resize", Json{{"session", "a"}, {"rows", 30.0}, {"cols", 100}});
  REQUIRE(resize);
  CHECK(std::get<ResizeCall>(resize.value()).rows == 30);
  CHECK(parse("terminal_open", Json{{"linger", 1.5}}).error()->message ==
        "argument \"linger\" must be whole seconds 0..604800");
  CHECK(parse("terminal_send", Json{{"session", nullptr}}).error()->message == "missing argument \"session\"");
  CHECK(parse("terminal_send", Json{{"session", "a"}, {"timeout_ms", 1e300}}).error()->message ==
        "argument \"timeout_ms\" must be an integer");
}

TEST_CASE("the field table: every open option of the faces is a field of both protocols") {
  const auto* json_open = dshpty::tool::find_op(dshpty::tool::json_ops(), "open");
  const auto* mcp_open = dshpty::tool::find_op(dshpty::tool::mcp_tools(), "terminal_open");
  REQUIRE(json_open);
  REQUIRE(mcp_open);
  auto has = [](const dshpty::tool::OpFields* row, std::string_view name) {
    for (const auto& field : row->fields)
      if (field.name == name) return true;
    return false;
  };
  for (const auto& option : dshpty::engine::kOpenOptions) {
    CHECK_MESSAGE(has(json_open, option.key), option.key);
    CHECK_MESSAGE(has(mcp_open, option.key), option.key);
  }
  // And the other way: a field of the table that no face reads would be accepted and ignored.
  auto read_by_faces = [](std::string_view name) {
    if (name == "type" || name == "name" || name == "cwd" || name == "linger" || name == "limits" ||
        name == "record")
      return true;
    for (const auto& option : dshpty::engine::kOpenOptions)
      if (option.key == name) return true;
    return false;
  };
  for (const auto* row : {json_open, mcp_open})
    for (const auto& field : row->fields) CHECK_MESSAGE(read_by_faces(field.name), field.name);
}

TEST_CASE("terminal_open's record: a boolean passed to the backend as its option") {
  auto opened = parse_tool_call("terminal_open", Json{{"record", false}});
  REQUIRE(opened);
  REQUIRE(*opened);
  CHECK(std::get<OpenCall>(opened->value()).request.options.at("record") == "false");
  auto bad = parse_tool_call("terminal_open", Json{{"record", "no"}});
  REQUIRE(bad);
  CHECK_FALSE(*bad);
}

TEST_CASE("terminal_open's limits: read into the request, refused naming the member; its schema from the table") {
  auto parse = [](const char* name, Json arguments) {
    auto parsed = parse_tool_call(name, arguments);
    REQUIRE(parsed);
    return std::move(*parsed);
  };
  auto call = parse("terminal_open", Json{{"limits", {{"pids", 64}, {"cpu", 0.25}}}});
  REQUIRE(call);
  const auto& open = std::get<OpenCall>(call.value()).request;
  CHECK(open.limits.pids == 64u);
  CHECK(open.limits.cpu == 0.25);
  CHECK_FALSE(open.limits.memory);
  CHECK(parse("terminal_open", Json{{"limits", {{"memory", -1}}}}).error()->message ==
        "argument \"limits.memory\" must be a positive integer");
  CHECK(parse("terminal_open", Json{{"limits", {{"pid", 1}}}}).error()->message ==
        "argument \"limits.pid\" is no limit (pids, memory, cpu)");
  const Json tools = tool_list();
  for (const Json& tool : tools)
    if (tool["name"] == "terminal_open") {
      const Json& limits = tool["inputSchema"]["properties"]["limits"];
      CHECK(limits["type"] == "object");
      CHECK(limits["additionalProperties"] == false);
      CHECK(limits["properties"]["pids"]["type"] == "integer");
      CHECK(limits["properties"]["cpu"]["type"] == "number");
    }
}
