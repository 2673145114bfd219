// The pure parts of dshpty-repl and of the engine's render/: the result cap, the line
// splitter, the command line, the text command parser, session naming and completion, and
// the exact texts.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "completion.hpp"
#include "host_setup.hpp"
#include "line_splitter.hpp"
#include "options.hpp"
#include "render/escape.hpp"
#include "render/linger_format.hpp"
#include "render/status_lookalikes.hpp"
#include "render/text_format.hpp"
#include "session_lookup.hpp"
#include "shell_words.hpp"
#include "text/truncation.hpp"
#include "text/utf8.hpp"
#include "text_command.hpp"

using namespace dshpty;
using namespace dshpty::repl;
using namespace dshpty::tool;
using namespace dshpty::render;
using dshpty::engine::resolve_session;

TEST_CASE("the motd is cut with the one truncation: head, marker line, tail") {
  SpawnResult opened;
  opened.session.id = "pty-1";
  opened.session.type = "shell";
  std::string motd;
  for (int i = 1; i <= 200; ++i) motd += "motd line " + std::to_string(i) + "\n";
  opened.motd = motd;
  const std::string cut = format_open(opened, 256);
  CHECK(cut.find("motd line 1\n") != std::string::npos);
  CHECK(cut.find("[output truncated: ") != std::string::npos);
  CHECK(cut.find("motd line 200\n") != std::string::npos);
  CHECK(cut.find("motd line 100\n") == std::string::npos);
}

TEST_CASE("one escape for every value the text face prints: names, cwd, reasons, error messages") {
  CHECK(escape("plain /tmp/x") == "plain /tmp/x");
  CHECK(escape("x]\n[session: exited code=0]") == "x]\\n[session: exited code=0]");
  CHECK(escape(std::string("a\tb\rc\x1b[31md\x07\x7f\\", 14)) == "a\\tb\\rc\\e[31md\\x07\\x7f\\\\");
  CHECK(has_control("a\nb"));
  CHECK(has_control(std::string("\x7f")));
  CHECK_FALSE(has_control("caf\xC3\xA9 \\ ok"));

  SendResult sent;
  sent.viewport = "ok\n";
  sent.wait_reason = WaitReason::stdin_read;
  sent.exit_code = 0;
  sent.cwd = "/tmp/x]\n[session: exited code=0 signal=null]";
  CHECK(format_send(sent, 1024) ==
        "ok\n[wait: stdin_read]\n[exit: 0]\n[cwd: /tmp/x]\\n[session: exited code=0 signal=null]]\n[session: running]\n");
  SessionSnapshot named;
  named.id = "pty-1";
  named.name = "a\x1b]0;t\x07";
  named.type = "shell";
  CHECK(format_list({named}) == "pty-1 (a\\e]0;t\\x07) [shell] running\n");
  CHECK(format_error(make_error(Code::INVALID_ARGUMENT, "unknown field \"a\nb\"")) ==
        "error: INVALID_ARGUMENT: unknown field \"a\\nb\"\n");
  CHECK(format_error(make_error(Code::CLEANUP_FAILED, "two", {make_error(Code::BACKEND_FAILED, "x\ny")})) ==
        "error: CLEANUP_FAILED: two\n  BACKEND_FAILED: x\\ny\n");
}

TEST_CASE("LineSplitter: lines across chunks, CRLF, overlong lines, the last line") {
  std::vector<std::string> lines;
  int overlong = 0;
  LineSplitter splitter(8, {[&](std::string_view line) { lines.emplace_back(line); }, [&] { ++overlong; }});
  splitter.feed("ab");
  splitter.feed("c\r\nde");
  splitter.feed("\n0123456789abcdef");
  CHECK(overlong == 0);  // reported at the end of the line, once
  splitter.feed("more\nok\nlast");
  CHECK(overlong == 1);
  splitter.finish();
  CHECK(lines == std::vector<std::string>{"abc", "de", "ok", "last"});

  int seen = 0;
  LineSplitter* self = nullptr;
  LineSplitter stopping(100, {[&](std::string_view) {
                                ++seen;
                                self->stop();
                              },
                              {}});
  self = &stopping;
  stopping.feed("a\nb\n");  // stop() inside the handler drops the rest
  CHECK(seen == 1);
}

TEST_CASE("parse_options: values, limits, errors") {
  auto parse = [](std::vector<std::string_view> args) { return parse_options(args); };
  auto defaults = parse({});
  REQUIRE(defaults);
  CHECK(defaults->max_result_bytes == 256u * 1024);
  CHECK_FALSE(defaults->json);

  auto all = parse({"--json", "--shell", "/usr/bin/zsh", "--cwd=/tmp", "--rows", "24", "--cols=80", "--idle-ms", "500",
                    "--timeout-ms", "9000", "--max-result-bytes", "64"});
  REQUIRE(all);
  CHECK(all->json);
  CHECK(*all->shell == "/usr/bin/zsh");
  CHECK(*all->cwd == "/tmp");
  CHECK(*all->rows == 24);
  CHECK(*all->cols == 80);
  CHECK(all->idle->count() == 500);
  CHECK(all->timeout->count() == 9000);
  CHECK(all->max_result_bytes == 64);

  CHECK_FALSE(parse({"--max-result-bytes", "63"}));
  CHECK_FALSE(parse({"--rows", "0"}));
  CHECK_FALSE(parse({"--rows", "abc"}));
  CHECK_FALSE(parse({"--cols"}));
  CHECK_FALSE(parse({"--bogus"}));
  CHECK_FALSE(parse({"--json=yes"}));
  CHECK_FALSE(parse({"--json", "--open-main"}));
  CHECK(parse({"--open-main"})->open_main);
  CHECK(parse({"--help"})->help);
  CHECK(parse({"--version"})->version);
  CHECK(parse({"--max-result-bytes", "63"}).error()->code == Code::INVALID_ARGUMENT);

  CHECK(parse({"--shell", "/bin/sh"}).error()->code == Code::INVALID_ARGUMENT);
  CHECK(parse({"--shell", "zsh", "--rc", "user", "--history", "off"}));
  CHECK(parse({"--rc", "all"}).error()->code == Code::INVALID_ARGUMENT);
  CHECK(parse({"--history", "relative/file"}).error()->code == Code::INVALID_ARGUMENT);
  CHECK(usage_text().find("--max-result-bytes") != std::string::npos);
}

TEST_CASE("split_shell_words: words as a shell splits them, no shell run") {
  using Words = std::vector<std::string>;
  auto split = [](std::string_view text) { return split_shell_words(text); };
  CHECK(*split("ssh -T  box\tdshpty-supervisor --stdio\n") ==
        Words{"ssh", "-T", "box", "dshpty-supervisor", "--stdio"});
  CHECK(split("")->empty());
  CHECK(split("  \t\n ")->empty());
  // Single quotes keep everything, backslashes and double quotes included.
  CHECK(*split("sh -c 'exec \"$X\" \\n; a|b'") == Words{"sh", "-c", "exec \"$X\" \\n; a|b"});
  // Double quotes: a backslash escapes only \ " $ ` and a newline (removed).
  CHECK(*split(R"(echo "a\"b\\c\$d\`e\nf")") == Words{"echo", "a\"b\\c$d`e\\nf"});
  CHECK(*split("\"one\\\ntwo\"") == Words{"onetwo"});
  // Outside quotes a backslash keeps the next character; backslash-newline joins lines.
  CHECK(*split(R"(a\ b c\'d \"e\\)") == Words{"a b", "c'd", "\"e\\"});
  CHECK(*split("one\\\ntwo") == Words{"onetwo"});
  // Quotes join the word they touch; '' and "" are empty words.
  CHECK(*split("--opt='a b'\"c d\"e") == Words{"--opt=a bc de"});
  CHECK(*split("x '' \"\" y") == Words{"x", "", "", "y"});
  // Nothing is expanded and no operator is special.
  CHECK(*split("echo $HOME ~ * ; a&&b") == Words{"echo", "$HOME", "~", "*", ";", "a&&b"});

  for (const char* bad : {"ssh 'box", "ssh \"box", "ssh \"box\\\"", "ssh box\\", "'"}) {
    CAPTURE(bad);
    auto result = split(bad);
    REQUIRE_FALSE(result);
    CHECK(result.error()->code == Code::INVALID_ARGUMENT);
  }
  CHECK(split("ssh 'box").error()->message.find("unterminated single quote at character 5") != std::string::npos);
  CHECK(split("a \"b").error()->message.find("unterminated double quote") != std::string::npos);
  CHECK(split("a\\").error()->message.find("backslash") != std::string::npos);
}

TEST_CASE("--remote NAME=COMMAND and the link bounds") {
  auto parse = [](std::vector<std::string_view> args) { return parse_options(args); };
  auto two = parse({"--remote", "box=ssh -T -o 'ProxyCommand=nc %h %p' box dshpty-supervisor --stdio",
                    "--remote=pod=kubectl exec -i pod -- dshpty-supervisor --stdio", "--remote-ping-ms", "200",
                    "--remote-timeout-ms=1000"});
  REQUIRE(two);
  REQUIRE(two->remotes.size() == 2);
  CHECK(two->remotes[0].name == "box");
  CHECK(two->remotes[0].transport ==
        std::vector<std::string>{"ssh", "-T", "-o", "ProxyCommand=nc %h %p", "box", "dshpty-supervisor", "--stdio"});
  CHECK(two->remotes[1].name == "pod");
  CHECK(two->remotes[1].transport.front() == "kubectl");
  CHECK(two->remote_ping->count() == 200);
  CHECK(two->remote_timeout->count() == 1000);
  // The first '=' ends the name.
  CHECK(parse({"--remote", "b=env A=1 sh"})->remotes[0].transport == std::vector<std::string>{"env", "A=1", "sh"});

  auto message = [&](std::vector<std::string_view> args) {
    auto result = parse(args);
    REQUIRE_FALSE(result);
    CHECK(result.error()->code == Code::INVALID_ARGUMENT);
    return result.error()->message;
  };
  CHECK(message({"--remote", "ssh -T box"}).find("NAME=COMMAND") != std::string::npos);
  CHECK(message({"--remote", "=ssh box"}).find("NAME before '=' is empty") != std::string::npos);
  CHECK(message({"--remote", "shell=sh"}).find("\"shell\" is the local backend's") != std::string::npos);
  CHECK(message({"--remote", "my box=sh"}).find("blank") != std::string::npos);
  CHECK(message({"--remote", "box="}).find("COMMAND is empty") != std::string::npos);
  CHECK(message({"--remote", "box=  "}).find("COMMAND is empty") != std::string::npos);
  CHECK(message({"--remote", "box=ssh 'box"}).find("--remote box: unterminated single quote") != std::string::npos);
  CHECK(message({"--remote", "box=sh", "--remote", "box=ssh box"}).find("given twice") != std::string::npos);
  CHECK(message({"--remote"}).find("needs a value") != std::string::npos);
  CHECK(message({"--remote-ping-ms", "0"}).find("--remote-ping-ms") != std::string::npos);
  CHECK(message({"--remote-ping-ms", "500", "--remote-timeout-ms", "500"}).find("must be below") != std::string::npos);
  CHECK(message({"--remote-ping-ms", "30000"}).find("the default") != std::string::npos);

  // Each remote's configuration: the far shell from the same options, the bounds for all.
  auto options = parse({"--shell", "fish", "--rc", "user", "--cwd", "/here", "--rows", "24", "--cols", "80", "--idle-ms", "700",
                        "--timeout-ms", "9000", "--remote", "box=ssh box dshpty-supervisor --stdio",
                        "--remote-timeout-ms", "1200"});
  REQUIRE(options);
  const RemoteConfig config = remote_config(*options, options->remotes[0]);
  CHECK(config.type == "box");
  CHECK(config.transport == std::vector<std::string>{"ssh", "box", "dshpty-supervisor", "--stdio"});
  CHECK(config.shell.shell == "fish");  // the far side starts it with its integration
  CHECK(config.shell.rc == ShellConfig::StartupFiles::user);
  CHECK(config.shell.argv.empty());
  CHECK_FALSE(config.shell.cwd);  // a path on this machine
  CHECK(config.shell.rows == 24);
  CHECK(config.shell.cols == 80);
  CHECK(config.shell.idle_silence.count() == 700);
  CHECK(config.shell.send_timeout.count() == 9000);
  CHECK(config.link_timeout.count() == 1200);
  CHECK(config.ping_interval.count() == 400);  // a third of the timeout, below the default
  const RemoteConfig defaults = remote_config(*parse({"--remote", "b=sh"}), {"b", {"sh"}});
  CHECK(defaults.ping_interval == RemoteConfig{}.ping_interval);
  CHECK(defaults.link_timeout == RemoteConfig{}.link_timeout);
  CHECK(defaults.shell.argv == ShellConfig{}.argv);
  CHECK(usage_text().find("--remote NAME=COMMAND") != std::string::npos);
}

namespace {
ParseContext context_with(std::vector<std::string> sessions, bool has_current = false) {
  ParseContext context;
  context.has_current = has_current;
  context.names_session = [sessions](std::string_view word) {
    for (const auto& s : sessions)
      if (s == word) return true;
    return false;
  };
  return context;
}
using Kind = TextCommand::Kind;
}  // namespace

TEST_CASE("parse_text_command: send keeps its text verbatim") {
  const auto context = context_with({"pty-1", "main"});
  auto send = parse_text_command("send main echo  \"a  b\" 'c'", context);
  REQUIRE(send);
  CHECK(send->kind == Kind::send);
  CHECK(*send->target == "main");
  CHECK(send->text == "echo  \"a  b\" 'c'");
  CHECK_FALSE(send->submit.has_value());

  auto options = parse_text_command("send --no-submit main --timeout 5000 --idle 200 y", context);
  REQUIRE(options);
  CHECK(options->submit == false);
  CHECK(options->timeout->count() == 5000);
  CHECK(options->idle->count() == 200);
  CHECK(options->text == "y");

  auto dashes = parse_text_command("send main -- --version", context);
  REQUIRE(dashes);
  CHECK(dashes->text == "--version");
  auto late = parse_text_command("send main ls --timeout 5", context);
  CHECK(late->text == "ls --timeout 5");
  auto empty = parse_text_command("send main", context);
  REQUIRE(empty);
  CHECK(empty->text.empty());

  CHECK_FALSE(parse_text_command("send", context));
  CHECK_FALSE(parse_text_command("send main --timeout soon ls", context));
}

TEST_CASE("parse_text_command: with a current session the id may be left out") {
  const auto context = context_with({"pty-1", "main"}, true);
  auto send = parse_text_command("send ls -l", context);
  REQUIRE(send);
  CHECK_FALSE(send->target);
  CHECK(send->text == "ls -l");
  auto named = parse_text_command("send main ls", context);
  CHECK(*named->target == "main");
  CHECK(named->text == "ls");

  auto read = parse_text_command("read 10 5", context);
  REQUIRE(read);
  CHECK_FALSE(read->target);
  CHECK(*read->offset == 10);
  CHECK(*read->count == 5);
  CHECK_FALSE(parse_text_command("read", context)->target);
  CHECK(*parse_text_command("read pty-1 3", context)->target == "pty-1");

  auto signal = parse_text_command("signal int", context);
  REQUIRE(signal);
  CHECK(signal->signal == Signal::sigint);
  CHECK_FALSE(signal->target);
  CHECK_FALSE(parse_text_command("close", context)->target);
}

TEST_CASE("parse_text_command: the other commands and their errors") {
  const auto context = context_with({"pty-1"});
  auto open = parse_text_command("open shell main --cwd '/tmp/a b'", context);
  REQUIRE(open);
  CHECK(open->kind == Kind::open);
  CHECK(open->type == "shell");
  CHECK(*open->name == "main");
  CHECK(*open->cwd == "/tmp/a b");
  CHECK_FALSE(parse_text_command("open shell main", context)->cwd);
  CHECK_FALSE(parse_text_command("open", context));
  CHECK_FALSE(parse_text_command("open shell a b", context));
  CHECK_FALSE(parse_text_command("open shell --bogus", context));
  auto options = parse_text_command("open shell --term xterm --sandbox=workspace-write --network on w", context);
  REQUIRE(options);
  CHECK(*options->name == "w");
  CHECK(options->options ==
        std::map<std::string, std::string>{{"network", "on"}, {"sandbox", "workspace-write"}, {"terminal", "xterm"}});
  CHECK_FALSE(parse_text_command("open shell --term", context));
  CHECK(parse_text_command("open shell main", context)->options.empty());
  // Any registered type, a remote one (--remote box=...) too: the service checks it.
  auto remote = parse_text_command("open box build --term xterm", context);
  REQUIRE(remote);
  CHECK(remote->type == "box");
  CHECK(*remote->name == "build");

  auto read = parse_text_command("read pty-1", context);
  REQUIRE(read);
  CHECK(*read->target == "pty-1");
  CHECK_FALSE(read->offset);
  CHECK(*parse_text_command("read pty-9 2 3", context)->target == "pty-9");  // unknown: the service says so
  CHECK_FALSE(parse_text_command("read", context));
  CHECK_FALSE(parse_text_command("read pty-1 x", context));
  CHECK_FALSE(parse_text_command("read pty-1 -1", context));

  auto signal = parse_text_command("signal pty-1 SIGTERM", context);
  REQUIRE(signal);
  CHECK(signal->signal == Signal::sigterm);
  CHECK_FALSE(parse_text_command("signal pty-1 SIGUSR1", context));
  CHECK_FALSE(parse_text_command("signal SIGINT", context));  // no current session

  CHECK(parse_text_command("close pty-1", context)->kind == Kind::close);
  CHECK_FALSE(parse_text_command("close", context));
  CHECK(parse_text_command("list", context)->kind == Kind::list);
  CHECK_FALSE(parse_text_command("list x", context));
  CHECK(parse_text_command("  help  ", context)->kind == Kind::help);
  CHECK(parse_text_command("quit", context)->kind == Kind::quit);
  CHECK(parse_text_command("", context)->kind == Kind::empty);
  CHECK(parse_text_command("   ", context)->kind == Kind::empty);
  CHECK(*parse_text_command("use main", context)->target == "main");
  CHECK_FALSE(parse_text_command("use", context)->target);

  auto unknown = parse_text_command("frobnicate", context);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error()->code == Code::INVALID_ARGUMENT);
  CHECK(unknown.error()->message == "unknown command \"frobnicate\" (try help)");
  CHECK_FALSE(split_words("a 'b"));
}

TEST_CASE("jobs on the text face: send --background/--until-*, output JOB [--wait MS], stop JOB") {
  const auto context = context_with({"pty-1", "main"}, true);
  auto job = parse_text_command("send main --background --until-output 'Serving HTTP on \\S+' --until-port 8123 "
                                "python3 -m http.server 8123", context);
  REQUIRE(job);
  CHECK(job->background);
  CHECK(*job->target == "main");
  CHECK(*job->until.output_regex == "Serving HTTP on \\S+");
  CHECK(*job->until.port == 8123);
  CHECK(job->text == "python3 -m http.server 8123");
  // Without --background: a send that also settles on the condition; the text stays verbatim.
  auto until = parse_text_command("send --until-output ready  npm run  dev", context);
  REQUIRE(until);
  CHECK_FALSE(until->background);
  CHECK(*until->until.output_regex == "ready");
  CHECK_FALSE(until->until.port);
  CHECK(until->text == "npm run  dev");
  CHECK_FALSE(parse_text_command("send main echo --background", context)->background);

  CHECK(parse_text_command("send --until-port x true", context).error()->message ==
        "--until-port needs a TCP port number (1..65535), not \"x\"");
  CHECK(parse_text_command("send --until-output", context).error()->message.rfind("--until-output needs a regex", 0) == 0);
  CHECK(parse_text_command("send --until-output 'open true", context).error()->message == "unterminated quote");

  auto output = parse_text_command("output 3 --wait 2500", context);
  REQUIRE(output);
  CHECK(output->kind == Kind::output);
  CHECK(output->job == 3u);
  CHECK(output->wait == std::chrono::milliseconds(2500));
  CHECK_FALSE(parse_text_command("output 3", context)->wait);
  CHECK(parse_text_command("output --wait=10 4", context)->job == 4u);
  auto stop = parse_text_command("stop 12", context);
  REQUIRE(stop);
  CHECK(stop->kind == Kind::stop);
  CHECK(stop->job == 12u);

  for (const char* bad : {"output job-1", "output x", "output 0", "output -1", "stop 1.5", "stop 99999999999999999999999"}) {
    auto refused = parse_text_command(bad, context);
    REQUIRE_FALSE(refused);
    CHECK_MESSAGE(refused.error()->message.rfind("JOB must be a job number as send --background printed it", 0) == 0, bad);
  }
  for (const char* bad : {"output 1 --wait 0", "output 1 --wait 86400001", "output 1 --wait", "output 1 --wait x"}) {
    auto refused = parse_text_command(bad, context);
    REQUIRE_FALSE(refused);
    CHECK_MESSAGE(refused.error()->message.rfind("--wait must be an integer from 1 to 86400000 ms", 0) == 0, bad);
  }
  CHECK(parse_text_command("output", context).error()->message == "usage: output JOB [--wait MS]");
  CHECK(parse_text_command("stop 1 2", context).error()->message == "usage: stop JOB");
  CHECK(parse_text_command("stop 1 --wait 5", context).error()->message == "usage: stop JOB");
}

TEST_CASE("help lists every command, one line each") {
  const std::string help = help_text();
  for (const auto& name : command_names()) {
    const bool listed = help.find("\n" + name + " ") != std::string::npos || help.rfind(name + " ", 0) == 0;
    CHECK_MESSAGE(listed, name);
  }
}

namespace {
SessionSnapshot snapshot(std::string id, std::optional<std::string> name, std::optional<int> pid = 9) {
  SessionSnapshot s;
  s.id = std::move(id);
  s.name = std::move(name);
  s.type = "shell";
  s.pid = pid;
  return s;
}
}  // namespace

TEST_CASE("resolve_session: ids first, then names") {
  const std::vector<SessionSnapshot> sessions{snapshot("pty-1", "main"), snapshot("pty-2", "pty-1"),
                                              snapshot("pty-3", std::nullopt)};
  CHECK(*resolve_session("pty-1", sessions) == "pty-1");
  CHECK(*resolve_session("main", sessions) == "pty-1");
  CHECK(*resolve_session("pty-3", sessions) == "pty-3");
  CHECK_FALSE(resolve_session("other", sessions));
}

TEST_CASE("completion_candidates: commands, sessions, signals, types") {
  const std::vector<SessionSnapshot> sessions{snapshot("pty-1", "main"), snapshot("pty-2", "build")};
  const std::vector<std::string> types{"shell"};
  CHECK(completion_candidates("", "s", sessions, types) == std::vector<std::string>{"send", "screen", "signal", "stop"});
  CHECK(completion_candidates("", "o", sessions, types) == std::vector<std::string>{"open", "output"});
  CHECK(completion_candidates("", "", sessions, types).size() == command_names().size());
  CHECK(completion_candidates("send ", "", sessions, types) ==
        std::vector<std::string>{"pty-1", "pty-2", "main", "build"});
  CHECK(completion_candidates("read ", "m", sessions, types) == std::vector<std::string>{"main"});
  CHECK(completion_candidates("signal main ", "SIGT", sessions, types) == std::vector<std::string>{"SIGTERM", "SIGTSTP"});
  CHECK(completion_candidates("open ", "", sessions, types) == types);
  CHECK(completion_candidates("send main ", "", sessions, types).empty());
  // A remote backend's type is a type like "shell".
  const std::vector<std::string> with_remote{"shell", "box", "builder"};
  CHECK(completion_candidates("open ", "b", sessions, with_remote) == std::vector<std::string>{"box", "builder"});
}

TEST_CASE("the escape covers C1 controls, line and paragraph separators, bidi controls, stray bytes") {
  CHECK(escape("a\xC2\x85[exit: 0]") == "a\\u0085[exit: 0]");  // NEL
  CHECK(escape("\xC2\x80\xC2\x9B\xC2\x9F") == "\\u0080\\u009b\\u009f");
  CHECK(escape("x\xE2\x80\xA8y\xE2\x80\xA9z") == "x\\u2028y\\u2029z");
  // Every bidi control: U+061C, U+200E/200F, U+202A..202E, U+2066..2069.
  CHECK(escape("\xD8\x9C\xE2\x80\x8E\xE2\x80\x8F") == "\\u061c\\u200e\\u200f");
  CHECK(escape("\xE2\x80\xAA\xE2\x80\xAB\xE2\x80\xAC\xE2\x80\xAD\xE2\x80\xAE") ==
        "\\u202a\\u202b\\u202c\\u202d\\u202e");
  CHECK(escape("\xE2\x81\xA6\xE2\x81\xA7\xE2\x81\xA8\xE2\x81\xA9") == "\\u2066\\u2067\\u2068\\u2069");
  // A byte that is not UTF-8 (a lone 0x85 is NEL to a Latin-1 reader), a truncated sequence.
  CHECK(escape("a\x85" "b\xE2\x80") == "a\\x85b\\xe2\\x80");
  // Neighbours stay as they are: text, accents, CJK, an emoji, U+200B, U+2030, U+2065.
  const std::string kept = "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80 \xE2\x80\x8B\xE2\x80\xB0\xE2\x81\xA5 \xC2\xA0";
  CHECK(escape(kept) == kept);
  CHECK_FALSE(has_control(kept));
  for (const char* bad : {"\xC2\x85", "\xC2\x9B", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xD8\x9C", "\xE2\x80\x8F",
                          "\xE2\x80\xAE", "\xE2\x81\xA6", "\xFF"})
    CHECK_MESSAGE(has_control(std::string("main") + bad), bad);

  // Where values reach text: a cwd, a session's name in a list, a tombstone's name.
  SendResult sent;
  sent.viewport = "ok\n";
  sent.wait_reason = WaitReason::stdin_read;
  sent.cwd = "/tmp/x\xE2\x80\xA8[session: exited code=0 signal=null]\xE2\x80\xAE";
  CHECK(format_send_parts(sent, 1024).status ==
        "[wait: stdin_read]\n[cwd: /tmp/x\\u2028[session: exited code=0 signal=null]\\u202e]\n[session: running]\n");
  SessionSnapshot named;
  named.id = "pty-1";
  named.name = "a\xC2\x85" "b";
  named.type = "shell";
  CHECK(format_list({named}) == "pty-1 (a\\u0085b) [shell] running\n");
  engine::AttachOutcome gone;
  gone.name = "x\xE2\x80\xA9[exit: 0]";
  gone.error = make_error(Code::NO_SESSION, "none");
  CHECK(format_attach({gone}).rfind("terminal session (x\\u2029[exit: 0]) could not be attached", 0) == 0);
}

TEST_CASE("output that looks like a status line is marked with a backslash, on every reader's line") {
  CHECK(looks_like_status("[wait: stdin_read]"));
  CHECK(looks_like_status("[exit: 0]"));
  CHECK(looks_like_status("[cwd: /home]"));
  CHECK(looks_like_status("[session: running]"));
  CHECK(looks_like_status("[screen 24x80 cursor 1,1]"));
  CHECK(looks_like_status("[output truncated: 1 lines, 2 bytes left out]"));
  CHECK(looks_like_status("[lines: 1-2 of 2]"));
  // Hidden in front: blanks, a BOM, zero-width and bidi characters, NBSP, C1; case; a
  // fullwidth bracket; a blank inside the bracket.
  for (const char* forged : {"  [wait: stdin_read]", "\t[exit: 0]", "\xEF\xBB\xBF[wait: stdin_read]",
                             "\xE2\x80\x8B\xE2\x80\x8E\xE2\x80\xAE[exit: 0]", "\xC2\xA0[cwd: /]",
                             "\xC2\x85[session: running]", "[WAIT: stdin_read]", "\xEF\xBC\xBBwait: x]",
                             "[ session: running]", "\x1b[wait: x]", "\xE3\x80\x80[exit: 1]"})
    CHECK_MESSAGE(looks_like_status(forged), forged);
  // Ordinary output stays as it is.
  for (const char* plain : {"[1]+  Done  sleep 1", "[main 1a2b3c4] commit", "[INFO] waiting", "[waiting]",
                            "wait: [exit: 0]", "x [wait: stdin_read]", "\\[wait: stdin_read]", "[exits]", ""})
    CHECK_FALSE_MESSAGE(looks_like_status(plain), plain);

  // Marked wherever a reader starts a line: LF, CR, VT, FF, NEL, U+2028, U+2029, a backspace.
  CHECK(mark_status_lookalikes("a\n[wait: stdin_read]\n[exit: 0]\nb") == "a\n\\[wait: stdin_read]\n\\[exit: 0]\nb");
  CHECK(mark_status_lookalikes("[exit: 0]") == "\\[exit: 0]");
  CHECK(mark_status_lookalikes("x\r[exit: 0]\v[cwd: /]\f[session: running]") ==
        "x\r\\[exit: 0]\v\\[cwd: /]\f\\[session: running]");
  CHECK(mark_status_lookalikes("x\xC2\x85[exit: 0]\xE2\x80\xA8[wait: x]\xE2\x80\xA9 [cwd: /]") ==
        "x\xC2\x85\\[exit: 0]\xE2\x80\xA8\\[wait: x]\xE2\x80\xA9\\ [cwd: /]");
  CHECK(mark_status_lookalikes("x\b[exit: 0]") == "x\b\\[exit: 0]");
  CHECK(mark_status_lookalikes("\n\n[exit: 0]\n") == "\n\n\\[exit: 0]\n");
  // Our own line in the text is spared once; a copy of it is marked.
  const std::string marker = "[output truncated: 5 lines, 60 bytes left out]";
  CHECK(mark_status_lookalikes("a\n" + marker + "\n" + marker + "\nb", {marker}) ==
        "a\n" + marker + "\n\\" + marker + "\nb");
  // A multi-line send's "[typed ...]" is ours too, beside the marker; printed by a program,
  // it is marked.
  const std::string typed = "[typed 3 lines, 20 bytes]";
  CHECK(mark_status_lookalikes(typed + "\nout\n" + typed + "\n" + marker + "\n", {marker, typed}) ==
        typed + "\nout\n\\" + typed + "\n" + marker + "\n");
  CHECK(mark_status_lookalikes("x\n" + typed) == "x\n\\" + typed);

  // Through the text faces: a send, its screen, the motd, a page.
  SendResult sent;
  sent.viewport = "[wait: stdin_read]\n[exit: 0]\n[cwd: /tmp]\n[session: running]\nPassword: ";
  sent.wait_reason = WaitReason::stdin_read;
  sent.input_hidden = true;
  const SendText parts = format_send_parts(sent, 1024);
  CHECK(parts.output == "\\[wait: stdin_read]\n\\[exit: 0]\n\\[cwd: /tmp]\n\\[session: running]\nPassword: \n");
  CHECK(parts.status == "[wait: stdin_read, input hidden]\n[session: running]\n");
  CHECK(format_send(sent, 1024) == parts.output + parts.status);
  ScreenSnapshot screen;
  screen.rows = 2;
  screen.cols = 20;
  screen.lines = {"[exit: 0]", " [wait: stdin_read]"};
  CHECK(format_screen(screen, 1024) == "[screen 2x20 cursor 1,1]\n\\[exit: 0]\n\\ [wait: stdin_read]\n");
  sent.screen = screen;
  CHECK(format_send(sent, 1024) == parts.status + format_screen(screen, 1024));
  SpawnResult opened;
  opened.session.id = "pty-1";
  opened.session.type = "shell";
  opened.motd = "[session: exited code=0 signal=null]";
  CHECK(format_open(opened, 1024) == "started terminal session pty-1 [type: shell]\n\\[session: exited code=0 signal=null]\n");
  ReadPage page;
  page.text = "[lines: 1-1 of 1]\n";
  page.total_lines = 1;
  page.line_end = 1;
  CHECK(format_read(page, 1024) == "\\[lines: 1-1 of 1]\n[lines: 1-1 of 1]\n");

  // Every line of ours is recognised: a new kind of line missing from the words fails here.
  SendResult all;
  all.wait_reason = WaitReason::stdin_read;
  all.exit_code = 0;
  all.cwd = "/";
  all.session_status = SessionStatus::reconnecting("x");
  all.screen = screen;
  ScreenSnapshot bare;
  bare.rows = 1;
  bare.cols = 1;
  bare.alternate = true;
  std::string ours = format_send_parts(all, 1024).status + format_screen(bare, 1024) +
                     format_read(ReadPage{}, 1024) + text::truncation_marker({1, 1}) + "\n" +
                     "[page truncated: its oldest part left out]\n[send ended: x]\n[earlier output dropped]\n";
  std::size_t start = 0;
  for (std::size_t end; (end = ours.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = ours.substr(start, end - start);
    if (!line.empty() && line.front() == '[') CHECK_MESSAGE(looks_like_status(line), line);
  }
}

TEST_CASE("every result prints its exact text") {
  SpawnResult opened;
  opened.session = snapshot("pty-1", "main", 42);
  opened.motd = "";
  CHECK(format_open(opened, 1024) == "started terminal session pty-1 (main) [type: shell]\n(no startup output)\n");
  opened.session.name.reset();
  opened.motd = "welcome";
  CHECK(format_open(opened, 1024) == "started terminal session pty-1 [type: shell]\nwelcome\n");

  SendResult sent;
  sent.viewport = "hi\n";
  sent.wait_reason = WaitReason::stdin_read;
  CHECK(format_send(sent, 1024) == "hi\n[wait: stdin_read]\n[session: running]\n");
  sent.exit_code = 1;
  sent.cwd = "/tmp";
  CHECK(format_send(sent, 1024) == "hi\n[wait: stdin_read]\n[exit: 1]\n[cwd: /tmp]\n[session: running]\n");
  sent.exit_code.reset();
  sent.cwd.reset();
  sent.input_hidden = true;
  CHECK(format_send(sent, 1024) == "hi\n[wait: stdin_read, input hidden]\n[session: running]\n");
  sent.input_hidden = false;
  // A line not run: the state and its remedy in the wait line; what it waits behind below.
  sent.line_state = LineState::continuation;
  CHECK(format_send(sent, 1024) ==
        "hi\n[wait: stdin_read, continuation: send keys [\"C-c\"] to clear it]\n[session: running]\n");
  sent.line_state = LineState::kept;
  CHECK(format_send(sent, 1024) ==
        "hi\n[wait: stdin_read, line kept: send keys [\"C-c\"] to clear it]\n[session: running]\n");
  sent.wait_reason = WaitReason::inferred_idle;
  sent.line_state = LineState::queued;
  sent.queued_behind = QueuedBehind{4242, "make -j\n"};
  CHECK(format_send(sent, 1024) ==
        "hi\n[wait: inferred_idle, queued: the text waits for the running command to end]\n"
        "[queued behind: 4242 make -j\\n]\n[session: running]\n");
  // Typed ahead of a busy command and read since: said as such, never an answer to a prompt.
  sent.wait_reason = WaitReason::stdin_read;
  CHECK(format_send(sent, 1024) ==
        "hi\n[wait: stdin_read, typed ahead: the text went in while the command in front ran, and was read after "
        "it, not as an answer to a prompt seen]\n[queued behind: 4242 make -j\\n]\n[session: running]\n");
  // Read by a relay: where it went, and that its far side's doing is not known.
  sent.wait_reason = WaitReason::stdin_read;
  sent.line_state = LineState::relayed;
  sent.queued_behind = QueuedBehind{4243, "ssh far"};
  CHECK(format_send(sent, 1024) ==
        "hi\n[wait: stdin_read, line relayed: the relay in front read it; whether its far side ran it is not "
        "known here]\n[read by: 4243 ssh far]\n[session: running]\n");
  sent.wait_reason = WaitReason::inferred_idle;
  sent.line_state.reset();
  sent.queued_behind.reset();
  sent.taken_back_bytes = 21;
  CHECK(format_send(sent, 1024) ==
        "hi\n[wait: inferred_idle]\n[cancelled: the text was taken back before the shell read it]\n"
        "[session: running]\n");
  sent.taken_back_bytes = 0;
  sent.wait_reason = WaitReason::stdin_read;
  sent.viewport.clear();
  sent.wait_reason = WaitReason::session_exit;
  sent.session_status = SessionStatus::exited_with_code(2);
  CHECK(format_send(sent, 1024) == "(no new output)\n[wait: session_exit]\n[session: exited code=2 signal=null]\n");
  sent.session_status = SessionStatus::exited_by_signal(9);
  CHECK(format_status(sent.session_status) == "exited code=null signal=SIGKILL");
  // A remote session whose link ended: the transport's words, on one line.
  sent.session_status = SessionStatus::lost("ssh exited 255: Connection refused");
  CHECK(format_send(sent, 1024) ==
        "(no new output)\n[wait: session_exit]\n[session: lost: ssh exited 255: Connection refused]\n");
  CHECK(format_status(SessionStatus::lost("link silent\nfor 30 s\r\n")) == "lost: link silent\\nfor 30 s");
  CHECK(format_status(SessionStatus::lost("")) == "lost");
  // A lingering remote session whose link is being restored: the same escape for its reason.
  sent.session_status = SessionStatus::reconnecting("ssh killed by SIGKILL");
  CHECK(format_send(sent, 1024) ==
        "(no new output)\n[wait: session_exit]\n[session: reconnecting: ssh killed by SIGKILL]\n");
  CHECK(format_status(SessionStatus::reconnecting("ssh exited 255:\x1b[31m x\n")) ==
        "reconnecting: ssh exited 255:\\e[31m x");

  // The backend cut the viewport (its marker in place): the face shows it as it came.
  sent.viewport = "first\n[output truncated: 5 lines, 60 bytes left out]\nlast";
  sent.truncated = true;
  sent.omitted_lines = 5;
  sent.omitted_bytes = 60;
  sent.session_status = {};
  CHECK(format_send(sent, 64) ==
        "first\n[output truncated: 5 lines, 60 bytes left out]\nlast\n[wait: session_exit]\n[session: running]\n");
  sent.truncated = false;

  // On the alternate screen the screen replaces the line-mode text.
  ScreenSnapshot screen;
  screen.rows = 24;
  screen.cols = 80;
  screen.lines = {"hello world", "~", "-- INSERT --"};
  screen.cursor_row = 0;
  screen.cursor_col = 11;
  screen.alternate = true;
  screen.title = "vim \"notes\"";
  CHECK(format_screen(screen, 1024) ==
        "[screen 24x80 cursor 1,12 alternate title=\"vim \\\"notes\\\"\"]\nhello world\n~\n-- INSERT --\n");
  sent.viewport = "garbled drawing";
  sent.screen = screen;
  sent.session_status = SessionStatus{};
  sent.wait_reason = WaitReason::stdin_read;
  CHECK(format_send(sent, 1024) == "[wait: stdin_read]\n[session: running]\n" + format_screen(screen, 1024));
  sent.screen.reset();
  ScreenSnapshot plain;
  plain.rows = 2;
  plain.cols = 3;
  plain.cursor_visible = false;
  CHECK(format_screen(plain, 1024) == "[screen 2x3 cursor 1,1 hidden]\n");
  CHECK(format_resize("pty-1", 30, 100) == "resized pty-1 to 30x100\n");

  ReadPage page;
  CHECK(format_read(page, 1024) == "(no retained output)\n[lines: 0-0 of 0]\n");
  page.text = "a\nb\n";
  page.total_lines = 12;
  page.line_begin = 10;
  page.line_end = 12;
  CHECK(format_read(page, 1024) == "a\nb\n[lines: 11-12 of 12]\n");

  SignalResult signal;
  signal.signal = Signal::sigint;
  signal.target_pgid = 4242;
  CHECK(format_signal(signal) == "delivered SIGINT to foreground process group 4242\n");
  CHECK(format_close("pty-1", true) == "closed terminal session pty-1\n");
  CHECK(format_close("pty-1", false) == "terminal session pty-1 was already closing\n");

  CHECK(format_list({}) == "(no terminal sessions)\n");
  SessionSnapshot exited = snapshot("pty-3", std::nullopt, std::nullopt);
  exited.status = SessionStatus::exited_with_code(2);
  CHECK(format_list({snapshot("pty-2", "main"), exited}) ==
        "pty-2 (main) [shell] running pid=9\npty-3 [shell] exited code=2 signal=null\n");
  SessionSnapshot lost = snapshot("pty-4", "box", 12);
  lost.type = "box";
  lost.status = SessionStatus::lost("ssh exited 255: Connection reset");
  CHECK(format_list({lost}) == "pty-4 (box) [box] lost: ssh exited 255: Connection reset pid=12\n");

  CHECK(format_error(make_error(Code::NO_SESSION)) == "error: NO_SESSION: unknown PTY session ID\n");
  CHECK(format_error(make_error(Code::CLEANUP_FAILED, "failed to clean up PTY lifecycle",
                                {make_error(Code::BACKEND_FAILED, "boom")})) ==
        "error: CLEANUP_FAILED: failed to clean up PTY lifecycle\n  BACKEND_FAILED: boom\n");
}

TEST_CASE("--allow-socket and --protect: repeatable, into the shell backend's config") {
  auto options = parse_options(std::vector<std::string_view>{
      "--allow-socket", "/run/a.sock", "--protect", ".envrc", "--allow-socket=/home/u/b.sock", "--protect", "/w/secret"});
  REQUIRE(options);
  const ShellConfig config = shell_config(*options);
  CHECK(config.allow_sockets == std::vector<std::string>{"/run/a.sock", "/home/u/b.sock"});
  CHECK(config.protected_paths == std::vector<std::string>{".envrc", "/w/secret"});
  for (auto args : {std::vector<std::string_view>{"--allow-socket", "relative.sock"},
                    std::vector<std::string_view>{"--protect", ""}, std::vector<std::string_view>{"--protect"}}) {
    auto result = parse_options(args);
    REQUIRE_FALSE(result);
    CHECK(result.error()->code == Code::INVALID_ARGUMENT);
    CHECK(result.error()->message.find(std::string(args[0])) != std::string::npos);
  }
}

TEST_CASE("the operator's policy flags: --sandbox, --network, --workspace, --writable-root, --env") {
  auto options = parse_options(std::vector<std::string_view>{
      "--sandbox", "workspace-write", "--network=off", "--workspace", "/w/a", "--workspace", "/w/b",
      "--writable-root", "/cache", "--env", "GH_TOKEN"});
  REQUIRE(options);
  ShellConfig config = shell_config(*options);
  CHECK(config.sandbox == SandboxMode::workspace_write);
  CHECK(config.sandbox_floor == SandboxMode::workspace_write);
  CHECK_FALSE(config.sandbox_network);
  CHECK(config.network_floor);
  CHECK(config.workspaces == std::vector<std::string>{"/w/a", "/w/b"});
  CHECK(config.writable_roots == std::vector<std::string>{"/cache"});
  CHECK(config.env_pass == std::vector<std::string>{"GH_TOKEN"});
  const auto policy = engine_settings(*options).policy;
  CHECK(policy.sandbox_default == "workspace-write");
  CHECK(policy.sandbox_allowed == std::vector<std::string>{"workspace-write", "read-only"});
  CHECK(policy.network_off);
  // --network on is a default, not a floor; no --workspace: --cwd is the one workspace.
  options = parse_options(std::vector<std::string_view>{"--network", "on", "--cwd", "/srv/repo"});
  REQUIRE(options);
  config = shell_config(*options);
  CHECK(config.sandbox_network);
  CHECK_FALSE(config.network_floor);
  CHECK(config.sandbox_floor == SandboxMode::none);
  CHECK(config.workspaces == std::vector<std::string>{"/srv/repo"});
  CHECK_FALSE(engine_settings(*options).policy.network_off);
  for (auto args : {std::vector<std::string_view>{"--sandbox", "strict"}, std::vector<std::string_view>{"--network", "OFF"},
                    std::vector<std::string_view>{"--workspace", "rel"}, std::vector<std::string_view>{"--env", "A=1"},
                    std::vector<std::string_view>{"--writable-root", ""}}) {
    auto result = parse_options(args);
    REQUIRE_FALSE(result);
    CHECK(result.error()->code == Code::INVALID_ARGUMENT);
    CHECK(result.error()->message.find(std::string(args[0])) != std::string::npos);
  }
}

TEST_CASE("a confined session's line: its mode, network, writable roots and protected paths") {
  Confinement c{"workspace-write", false, {"/ws"}, {"/ws/.git", "/other/x"}};
  CHECK(format_confinement(c, true) == "[confined: workspace-write, network off, writable: /ws; read-only inside: .git, /other/x]");
  CHECK(format_confinement(c, false) == "[confined: workspace-write, network off]");
  SessionSnapshot s = snapshot("pty-2", "main");
  s.confinement = c;
  CHECK(format_list({s}) == "pty-2 (main) [shell] running pid=9 [confined: workspace-write, network off]\n");
  SpawnResult opened{s, "motd\n"};
  CHECK(format_open(opened, 1000) ==
        "started terminal session pty-2 (main) [type: shell]\n[confined: workspace-write, network off, writable: /ws; "
        "read-only inside: .git, /other/x]\nmotd\n");
}

TEST_CASE("--help names every text command and every open flag (one source with the help command)") {
  const std::string usage = usage_text();
  for (const auto& name : command_names()) {
    const bool listed = usage.find("\n  " + name + " ") != std::string::npos;
    CHECK_MESSAGE(listed, name);
  }
  for (const auto& option : engine::kOpenOptions) CHECK_MESSAGE(usage.find(std::string(option.flag) + " ") != std::string::npos, option.flag);
  CHECK(usage.find("--linger SECONDS") != std::string::npos);
}

TEST_CASE("limits on the text face: open's --limit-* flags, [limit: ...] in a list") {
  const auto context = context_with({});
  auto open = parse_text_command("open shell box --limit-pids 64 --limit-memory=1048576 --limit-cpu 0.5", context);
  REQUIRE(open);
  CHECK(open->limits.pids == 64u);
  CHECK(open->limits.memory == 1048576u);
  CHECK(open->limits.cpu == 0.5);
  auto bad = parse_text_command("open shell --limit-pids 0", context);
  REQUIRE_FALSE(bad);
  CHECK(bad.error()->message == "--limit-pids needs a positive whole number, not \"0\"");
  CHECK_FALSE(parse_text_command("open shell --limit-cpu half", context));
  CHECK_FALSE(parse_text_command("open shell --limit-memory", context));

  CHECK(format_limit_hit(LimitHit{LimitKind::pids}) == "[limit: pids]");
  CHECK(format_limit_hit(LimitHit{LimitKind::memory, 1234, "python3"}) == "[limit: memory (OOM kill of 1234 python3)]");
  CHECK(format_limit_hit(LimitHit{LimitKind::memory, std::nullopt, "a\x1b]"}) == "[limit: memory (OOM kill of a\\e])]");
  SessionSnapshot hit = snapshot("pty-2", "main");
  hit.limit_hit = LimitHit{LimitKind::pids};
  CHECK(format_list({hit}) == "pty-2 (main) [shell] running pid=9 [limit: pids]\n");
}

TEST_CASE("recordings on the text face: open's --no-record; a failed or cut recording in a list") {
  const auto context = context_with({});
  auto open = parse_text_command("open shell box --no-record", context);
  REQUIRE(open);
  CHECK(open->options.at("record") == "false");
  CHECK(open_usage().find("[--no-record]") != std::string::npos);
  SessionSnapshot failed = snapshot("pty-2", "main");
  failed.recording = Recording{"/r/x.cast", RecordingState::failed, 10, "writing the recording: No space left on device"};
  CHECK(format_list({failed}) ==
        "pty-2 (main) [shell] running pid=9 [recording failed: writing the recording: No space left on device]\n");
  failed.recording->state = RecordingState::recording;
  CHECK(format_list({failed}) == "pty-2 (main) [shell] running pid=9\n");
}
