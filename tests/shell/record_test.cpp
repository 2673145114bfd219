// The recording's parts (backends/shell/record/): asciicast lines, UTF-8 across reads, safe
// file names, creation that never follows a planted link, the size cap, and a failed write
// that ends the recording with its cause.
#include <doctest/doctest.h>
#include <ev.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "record/asciicast.hpp"
#include "record/detached_writer.hpp"
#include "record/record_file.hpp"
#include "record/recorder.hpp"
#include "dshpty/shell.hpp"
#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::shell;
using namespace dshpty::shell::record;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/dshpty-record-test-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the loop until nothing is left to write: the recorder's flush timer and ev_io stop
// themselves, and then no watcher is active.
void drain(struct ev_loop* loop) {
  for (int i = 0; i < 1000 && ev_run(loop, EVRUN_ONCE); ++i) {
  }
}

}  // namespace

TEST_CASE("asciicast lines: header, escapes, times") {
  CastHeader h{.width = 100, .height = 30, .timestamp = 1700000000, .term = "xterm-256color",
               .shell = "/bin/bash", .title = "a \"name\"\n"};
  CHECK(encode_header(h) ==
        "{\"version\": 2, \"width\": 100, \"height\": 30, \"timestamp\": 1700000000, \"env\": {\"TERM\": "
        "\"xterm-256color\", \"SHELL\": \"/bin/bash\"}, \"title\": \"a \\\"name\\\"\\n\"}\n");
  CHECK(encode_event(1.5, 'o', "a\x1b[0m\\\r\n\x7f") == "[1.500000, \"o\", \"a\\u001b[0m\\\\\\r\\n\\u007f\"]\n");
  CHECK(encode_event(-1, 'm', "x") == "[0.000000, \"m\", \"x\"]\n");
}

TEST_CASE("JSON strings: every byte at every place of a word escaped as the plain rule says") {
  auto reference = [](std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
      const auto b = static_cast<unsigned char>(c);
      if (c == '"') out += "\\\"";
      else if (c == '\\') out += "\\\\";
      else if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else if (c == '\b') out += "\\b";
      else if (c == '\f') out += "\\f";
      else if (b < 0x20 || b == 0x7f) {
        char e[8];
        std::snprintf(e, sizeof e, "\\u%04x", b);
        out += e;
      } else out.push_back(c);
    }
    return out + "\"";
  };
  for (int byte = 0; byte < 256; ++byte) {
    for (std::size_t at = 0; at < 17; ++at) {
      std::string text(17, 'a');
      text[at] = static_cast<char>(byte);
      std::string out;
      append_json_string(out, text);
      REQUIRE_MESSAGE(out == reference(text), "byte " << byte << " at " << at);
    }
  }
}

TEST_CASE("UTF-8 across reads: a split character waits, ill-formed bytes become U+FFFD") {
  Utf8Stream s;
  std::string out;
  s.feed("caf\xC3", out);
  CHECK(out == "caf");
  s.feed("\xA9 \xFF ok \xE2\x82", out);
  CHECK(out == "caf\xC3\xA9 \xEF\xBF\xBD ok ");
  s.feed("\xAC", out);
  CHECK(out == "caf\xC3\xA9 \xEF\xBF\xBD ok \xE2\x82\xAC");
  s.feed("\xF0\x9F", out);
  s.finish(out);
  CHECK(out.ends_with("\xEF\xBF\xBD\xEF\xBF\xBD"));
}

TEST_CASE("the mark nonce never reaches the file, however the reads split it") {
  const std::string secret = "7f91dbf4495fce11";
  const std::string stream = "a\x1b]133;A;dshpty=" + secret + "\x07dsh> 7f91 \x1b]133;B;dshpty=" + secret + "\x07";
  const std::string want = "a\x1b]133;A;dshpty=\x07dsh> 7f91 \x1b]133;B;dshpty=\x07";
  for (std::size_t step = 1; step <= stream.size(); ++step) {
    SecretScrub scrub(secret);
    std::string out;
    for (std::size_t at = 0; at < stream.size(); at += step) scrub.feed(std::string_view(stream).substr(at, step), out);
    scrub.finish(out);
    CHECK_MESSAGE(out == want, "reads of " << step);
  }
  // The copy-free view: the bytes themselves when nothing is cut or held.
  SecretScrub viewed(secret);
  std::string scratch;
  const std::string plain = "no secret here 7f9";
  CHECK(viewed.view("no secret here", scratch).data() != scratch.data());
  CHECK(viewed.view(plain, scratch) == "no secret here ");  // "7f9" may start it: held
  CHECK(viewed.view("1dbf4495fce11!", scratch) == "!");
  Utf8Stream utf;
  CHECK(utf.view("caf\xC3\xA9", scratch) == "caf\xC3\xA9");
  CHECK(utf.view("x\xFF", scratch) == "x\xEF\xBF\xBD");
  SecretScrub none("");
  std::string out;
  none.feed("as is", out);
  CHECK(out == "as is");
}

TEST_CASE("send markers: text, keys, hidden input, check-in") {
  const std::string keys[] = {"Escape", ":", "q", "Enter"};
  CHECK(send_marker({.text = "echo hi"}) == "echo hi");
  CHECK(send_marker({.keys = keys}) == "keys: Escape : q Enter");
  CHECK(send_marker({.text = "ls", .keys = std::span(keys, 1)}) == "ls keys: Escape");
  CHECK(send_marker({.text = "s3cret", .shown = InputShown::hidden}) == "[hidden input]");
  CHECK(send_marker({.text = "s3cret", .shown = InputShown::relayed}) == "[input through a relay]");
  CHECK(send_marker({.check_in = true}) == "[check-in]");
}

TEST_CASE("the recorder: a send's input and a shown result are in the file at once") {
  // A host killed right after a send leaves what it typed in the file: no loop iteration
  // runs between the notes and the write to the terminal.
  TempDir dir;
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  auto file = create_recording_file(dir.path, "o", "pty-1", 0);
  REQUIRE(file);
  const std::string path = file->path;
  {
    Recorder r(loop, std::move(*file), CastHeader{.title = "t"}, 1 << 20);
    r.on_output("before\r\n");
    r.on_send({.text = "echo last-words"});
    r.on_input("echo last-words\r", InputShown::shown);
    const std::string data = slurp(path);
    CHECK(data.find("\"o\", \"before\\r\\n\"") != std::string::npos);
    CHECK(data.find("\"m\", \"echo last-words\"]\n") != std::string::npos);
    CHECK(data.ends_with("\"i\", \"echo last-words\\r\"]\n"));
    CHECK(r.state().bytes == data.size());
    // Output alone still waits for the loop (batched)...
    r.on_output("after\r\n");
    CHECK(slurp(path) == data);
    // ... until a result shows it: then it is in the file before the answer goes out.
    r.on_shown();
    CHECK(slurp(path).ends_with("\"o\", \"after\\r\\n\"]\n"));
    r.on_output("later\r\n");
    drain(loop);
    CHECK(slurp(path).ends_with("\"o\", \"later\\r\\n\"]\n"));
  }
  ev_loop_destroy(loop);
}

TEST_CASE("file names: sanitized parts, no directory escapes") {
  CHECK(sanitize_name_part("../etc/passwd") == "_._etc_passwd");
  CHECK(sanitize_name_part("") == "_");
  CHECK(sanitize_name_part(".hidden") == "_hidden");
  CHECK(sanitize_name_part(std::string(200, 'a')).size() == 64);
  CHECK(recording_file_name("mcp", "pty-1", 0, "0a1b2c3d") == "mcp-pty-1-19700101T000000Z-0a1b2c3d.cast");
  CHECK(recording_file_name("a/b", "pty-2", 0, "../x") == "a_b-pty-2-19700101T000000Z-_._x.cast");
  const auto unique = random_name_part();
  REQUIRE(unique);
  CHECK(unique->size() == kUniqueHexDigits);
  CHECK(unique->find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("names planted ahead cannot block a spawn: every name has a random part") {
  TempDir dir;
  // Every name the old scheme would have tried for this owner, session and second (the bare
  // one, then -2 .. -100), planted as links: the spawn takes a name nobody could plant.
  const std::string stem = dir.path + "/evil-pty-1-19700101T000000Z";
  REQUIRE(::symlink("/nowhere", (stem + ".cast").c_str()) == 0);
  for (int n = 2; n <= 100; ++n) REQUIRE(::symlink("/nowhere", (stem + "-" + std::to_string(n) + ".cast").c_str()) == 0);
  auto first = create_recording_file(dir.path, "evil", "pty-1", 0);
  REQUIRE_MESSAGE(first, describe(first.error()));
  auto second = create_recording_file(dir.path, "evil", "pty-1", 0);
  REQUIRE_MESSAGE(second, describe(second.error()));
  CHECK(first->path != second->path);
  const std::string name = std::filesystem::path(first->path).filename();
  CHECK(name.starts_with("evil-pty-1-19700101T000000Z-"));
  CHECK(name.size() == std::string("evil-pty-1-19700101T000000Z-.cast").size() + kUniqueHexDigits);
}

TEST_CASE("creation: mode 0600, never through a planted link, never over a file") {
  TempDir dir;
  TempDir elsewhere;
  const std::string target = elsewhere.path + "/victim";
  { std::ofstream(target) << "untouched"; }
  // A link planted under the first random part drawn: the next draw is taken.
  static int draws;
  draws = 0;
  auto aaaa_then_bbbb = +[]() -> Result<std::string> { return std::string(draws++ == 0 ? "aaaa" : "bbbb"); };
  const std::string planted = dir.path + "/" + recording_file_name("o", "pty-1", 0, "aaaa");
  REQUIRE(::symlink(target.c_str(), planted.c_str()) == 0);
  auto file = create_recording_file(dir.path, "o", "pty-1", 0, aaaa_then_bbbb);
  REQUIRE(file);
  CHECK(file->path == dir.path + "/" + recording_file_name("o", "pty-1", 0, "bbbb"));
  struct stat st {};
  REQUIRE(::fstat(file->fd.get(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 0777) == 0600);
  CHECK((::fcntl(file->fd.get(), F_GETFD) & FD_CLOEXEC) != 0);
  CHECK(slurp(target) == "untouched");

  // Every draw taken: a few tries, then the spawn fails saying so.
  auto always_aaaa = +[]() -> Result<std::string> { return std::string("aaaa"); };
  auto taken = create_recording_file(dir.path, "o", "pty-1", 0, always_aaaa);
  REQUIRE(!taken);
  CHECK(taken.error()->code == Code::BACKEND_FAILED);

  // No random part to be had (getrandom failing): the spawn fails saying so, no file made.
  auto no_draw = +[]() -> Result<std::string> { return make_error(Code::BACKEND_FAILED, "getrandom: ENOSYS"); };
  TempDir empty;
  auto undrawn = create_recording_file(empty.path, "o", "pty-1", 0, no_draw);
  REQUIRE(!undrawn);
  CHECK(undrawn.error()->code == Code::BACKEND_FAILED);
  CHECK(std::filesystem::is_empty(empty.path));

  auto missing = create_recording_file(dir.path + "/nope", "o", "pty-1", 0);
  REQUIRE(!missing);
  CHECK(missing.error()->code == Code::INVALID_ARGUMENT);
}

TEST_CASE("the recorder: events in order, the cap cuts with a marker, the end flushes") {
  TempDir dir;
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  auto file = create_recording_file(dir.path, "o", "pty-1", 0);
  REQUIRE(file);
  const std::string path = file->path;
  {
    Recorder r(loop, std::move(*file), CastHeader{.title = "t"}, 4096);
    r.on_send({.text = "echo hi"});
    r.on_input("echo hi\r", InputShown::shown);
    r.on_output("hi\r\n");
    r.on_input("pw\r", InputShown::hidden);
    r.on_input("farpw\r", InputShown::relayed);
    r.on_resize(30, 100);
    drain(loop);
    CHECK(r.state().state == RecordingState::recording);
    CHECK(r.state().bytes == slurp(path).size());
    for (int i = 0; i < 100; ++i) r.on_output(std::string(100, 'x'));
    CHECK(r.state().state == RecordingState::cut);
    r.on_output("after the cut");
    r.on_session_end();  // no loop run: the end writes what is buffered itself
    CHECK(r.state().state == RecordingState::cut);
  }
  const std::string data = slurp(path);
  CHECK(data.size() <= 4096);
  CHECK(data.find("[0.000000, \"m\", \"echo hi\"]\n") != std::string::npos);
  CHECK(data.find("\"i\", \"[hidden input]\"") != std::string::npos);
  CHECK(data.find("pw") == std::string::npos);
  CHECK(data.find("\"i\", \"[input through a relay]\"") != std::string::npos);
  CHECK(data.find("\"r\", \"100x30\"") != std::string::npos);
  CHECK(data.find("after the cut") == std::string::npos);
  CHECK(data.ends_with("\"m\", \"[recording cut: it reached record_max_bytes (4096 bytes)]\"]\n"));
  ev_loop_destroy(loop);
}

TEST_CASE("a full disk ends the recording with its cause, quietly") {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  // /dev/full fails every write with ENOSPC.
  RecordingFile full{proc::UniqueFd(::open("/dev/full", O_WRONLY | O_CLOEXEC | O_NONBLOCK)), "/dev/full"};
  REQUIRE(full.fd.get() >= 0);
  {
    Recorder r(loop, std::move(full), CastHeader{}, 1 << 20);
    r.on_output("hello");
    drain(loop);
    CHECK(r.state().state == RecordingState::failed);
    REQUIRE(r.state().error);
    CHECK(r.state().error->find("No space left on device") != std::string::npos);
    r.on_output("more");  // ignored, no error
    r.on_session_end();
    CHECK(r.state().state == RecordingState::failed);
  }
  ev_loop_destroy(loop);
}

TEST_CASE("the directory is held from the host's start: a link swapped in at its path changes nothing") {
  TempDir root;
  const std::string dir = root.path + "/rec";
  const std::string moved = root.path + "/rec-moved";
  const std::string elsewhere = root.path + "/elsewhere";
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  REQUIRE(::mkdir(elsewhere.c_str(), 0700) == 0);
  test::ShellFixture fx;
  ShellConfig config = fx.config();
  config.record_dir = dir;
  auto backend = make_shell_backend(fx.loop(), config);
  auto first = fx.spawn_on(*backend);
  REQUIRE_MESSAGE(first.session, describe(first.error));
  // Someone who can write the parent moves the directory away and plants a link at its name.
  REQUIRE(::rename(dir.c_str(), moved.c_str()) == 0);
  REQUIRE(::symlink(elsewhere.c_str(), dir.c_str()) == 0);
  auto second = fx.spawn_on(*backend);
  REQUIRE_MESSAGE(second.session, describe(second.error));
  REQUIRE(second.session->recording());
  const std::string name = std::filesystem::path(second.session->recording()->path).filename();
  // The file is in the directory held open (now at its new name), nothing went through the link.
  CHECK(std::filesystem::is_empty(elsewhere));
  CHECK(std::filesystem::exists(moved + "/" + name));
  CHECK(fx.close(*first.session).ok());
  CHECK(fx.close(*second.session).ok());
}

TEST_CASE("a long session name cannot push the file over the cap: the header's title is bounded") {
  TempDir dir;
  test::ShellFixture fx;
  ShellConfig config = fx.config();
  config.record_dir = dir.path;
  config.record_max_bytes = 4096;  // the least the tools allow
  std::string emoji;
  for (int i = 0; i < 1020; ++i) emoji += "\xF0\x9F\x98\x80";
  for (const std::string& name : {std::string(4090, 'N'), emoji, std::string(1000, '\x01')}) {
    SpawnRequest request;
    request.name = name;
    auto s = fx.spawn(config, request);
    REQUIRE_MESSAGE(s.session, describe(s.error));
    REQUIRE(s.session->recording());
    const std::string path = s.session->recording()->path;
    CHECK(fx.close(*s.session).ok());
    const std::string data = slurp(path);
    CHECK_MESSAGE(data.size() <= 4096, data.size());
    // Cut at a character's start: the header is still valid UTF-8 JSON, the title's head kept.
    const std::string header = data.substr(0, data.find('\n'));
    CHECK(header.find("\"title\": \"") != std::string::npos);
    CHECK(header.ends_with("\"}"));
    if (name == emoji) CHECK(header.find("\xF0\x9F\x98\x80\"}") != std::string::npos);
  }
}

TEST_CASE("a cut recording's bytes are the file's final size, before the buffer is written") {
  TempDir dir;
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  auto file = create_recording_file(dir.path, "o", "pty-1", 0);
  REQUIRE(file);
  const std::string path = file->path;
  {
    Recorder r(loop, std::move(*file), CastHeader{.title = "t"}, 4096);
    for (int i = 0; i < 100; ++i) r.on_output(std::string(100, 'x'));  // no loop run: all buffered
    REQUIRE(r.state().state == RecordingState::cut);
    const std::uint64_t told = r.state().bytes;
    drain(loop);
    CHECK(told == slurp(path).size());
    CHECK(r.state().bytes == slurp(path).size());
  }
  ev_loop_destroy(loop);
}

TEST_CASE("the nonce typed back by a client never reaches the file: input and markers are cut too, in any case") {
  TempDir dir;
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  auto file = create_recording_file(dir.path, "o", "pty-1", 0);
  REQUIRE(file);
  const std::string path = file->path;
  const std::string secret = "e588edeecd6c563b";
  {
    Recorder r(loop, std::move(*file), CastHeader{.title = "t"}, 1 << 20, secret);
    r.on_send({.text = "echo typed " + secret});
    r.on_input("echo typed " + secret + "\r", InputShown::shown);
    r.on_output("typed E588EDEECD6C563B\r\n");  // ${__dshpty_nonce^^}
    // Typed a key at a time: split across writes.
    for (char c : secret) r.on_input(std::string(1, c), InputShown::shown);
    r.on_input("\r", InputShown::shown);
    r.on_input(secret.substr(0, 5), InputShown::shown);  // a start of it, then the session ends
    r.on_session_end();
  }
  const std::string data = slurp(path);
  for (const std::string& piece : {secret, std::string("E588EDEECD6C563B"), secret.substr(0, 12)})
    CHECK_MESSAGE(data.find(piece) == std::string::npos, data);
  CHECK(data.find("\"m\", \"echo typed \"") != std::string::npos);
  CHECK(data.find("\"i\", \"echo typed \\r\"") != std::string::npos);
  CHECK(data.find("\"o\", \"typed \\r\\n\"") != std::string::npos);
  // What was held as the secret's possible start is written at the end, as it was typed.
  CHECK(data.find("\"i\", \"" + secret.substr(0, 5) + "\"") != std::string::npos);
  ev_loop_destroy(loop);
}

TEST_CASE("a spawn that fails after its recording was made leaves no file behind") {
  TempDir dir;
  test::ShellFixture fx;
  ShellConfig config = fx.config();
  config.record_dir = dir.path;
  config.argv = {"/bin/bash", "--noprofile", "--norc", "-c", "exit 4"};
  auto failed = fx.spawn(config);
  REQUIRE_FALSE(failed.session);
  CHECK_MESSAGE(describe(failed.error).find("exited during start-up") != std::string::npos, describe(failed.error));
  CHECK(std::filesystem::is_empty(dir.path));
  // The control: a spawn that starts keeps its file after its close.
  ShellConfig working = fx.config();
  working.record_dir = dir.path;
  auto started = fx.spawn(working);
  REQUIRE_MESSAGE(started.session, describe(started.error));
  REQUIRE(started.session->recording());
  const std::string path = started.session->recording()->path;
  CHECK(fx.close(*started.session).ok());
  CHECK(std::filesystem::exists(path));
}

TEST_CASE("the lingering helper's writer: a dying host's half line cut back, times never back, nonce cut, the cap") {
  TempDir dir;
  const std::string path = dir.path + "/rec.cast";
  // What a host killed mid-write leaves: whole lines, then half of one.
  { std::ofstream(path) << "{\"version\": 2}\n[5.000000, \"o\", \"host\"]\n[5.1000, \"o\", \"ha"; }
  {
    DetachedWriter w(proc::UniqueFd(::open(path.c_str(), O_WRONLY | O_CLOEXEC)), 1000.0, 1 << 20);
    w.set_secret("e588edeecd6c563b");
    w.output("away E588EDEECD6C563B\r\n", 1002.0);  // the clock says 2 s: the file's 5 s wins
    w.output("more\r\n", 1007.5);
    w.host_attached(1008.0);
    w.output("after the take-over\r\n", 1009.0);  // nothing more
  }
  const std::string data = slurp(path);
  CHECK_MESSAGE(data == "{\"version\": 2}\n[5.000000, \"o\", \"host\"]\n"
                        "[5.000000, \"m\", \"[no host holds the session: its helper records what it prints until a host takes it over]\"]\n"
                        "[5.000000, \"o\", \"away \\r\\n\"]\n"
                        "[7.500000, \"o\", \"more\\r\\n\"]\n"
                        "[8.000000, \"m\", \"[taken over by a new host: it records in a file of its own]\"]\n",
                data);
  // The cap: the event that would pass it becomes the cut marker, then nothing.
  const std::string capped = dir.path + "/cap.cast";
  { std::ofstream(capped) << "{\"version\": 2}\n"; }
  {
    DetachedWriter w(proc::UniqueFd(::open(capped.c_str(), O_WRONLY | O_CLOEXEC)), 0.0, 1024);
    for (int i = 0; i < 50; ++i) w.output(std::string(100, 'x'), 1.0);
  }
  const std::string cut = slurp(capped);
  CHECK(cut.size() <= 1024);
  CHECK(cut.ends_with("\"m\", \"[recording cut: it reached record_max_bytes (1024 bytes)]\"]\n"));
}
