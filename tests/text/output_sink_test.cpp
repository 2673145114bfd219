// The output pipeline: every sink sees every byte raw and as text, in the order the sinks
// were added; the motd is what came before the first prompt marker, however the stream
// was split.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "text/motd_capture.hpp"
#include "text/output_sink.hpp"
#include "text/scrollback.hpp"

using namespace dshpty::text;

namespace {

const std::string MARK = "\x1B]133;D;0;dshpty=0123456789abcdef\x07";

// Records what it was fed, and in which order relative to the other sinks.
struct Recorder final : OutputSink {
  Recorder(std::vector<std::string>& log, std::string name) : log(log), name(std::move(name)) {}
  void on_bytes(std::string_view raw) override {
    bytes.append(raw);
    log.push_back(name + ":bytes");
  }
  void on_text(const SanitizedText& chunk) override {
    text.append(chunk.text);
    markers += chunk.markers.size();
    log.push_back(name + ":text");
  }
  std::vector<std::string>& log;
  std::string name;
  std::string bytes;
  std::string text;
  std::size_t markers = 0;
};

}  // namespace

TEST_CASE("the pipeline feeds every sink raw bytes first, then their text, in order") {
  std::vector<std::string> log;
  Recorder first(log, "a"), second(log, "b");
  OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
  pipeline.add(first);
  pipeline.add(second);
  pipeline.feed("hi\r\n\x1B[1mbold\x1B[0m");
  CHECK(log == std::vector<std::string>{"a:bytes", "b:bytes", "a:text", "b:text"});
  CHECK(first.bytes == "hi\r\n\x1B[1mbold\x1B[0m");
  CHECK(first.text == "hi\nbold");
  CHECK(second.text == first.text);
}

TEST_CASE("output that is only escape sequences still reaches every sink, as empty text") {
  std::vector<std::string> log;
  Recorder sink(log, "s");
  OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
  pipeline.add(sink);
  pipeline.feed("\x1B[2J\x1B[H");
  CHECK(log == std::vector<std::string>{"s:bytes", "s:text"});
  CHECK(sink.text.empty());
}

TEST_CASE("finish delivers a held partial character, and nothing when nothing is held") {
  std::vector<std::string> log;
  Recorder sink(log, "s");
  OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
  pipeline.add(sink);
  pipeline.finish();
  CHECK(log.empty());
  pipeline.feed("x\xE2\x82");  // a euro sign cut short
  log.clear();
  pipeline.finish();
  CHECK(log == std::vector<std::string>{"s:text"});
  CHECK(sink.text == "x\xEF\xBF\xBD");
}

TEST_CASE("scrollback and motd as sinks: the motd ends at the first marker, in any split") {
  const std::string stream = "Welcome\r\nto the box\r\n" + MARK + "dsh> later output\r\n";
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    INFO("cut at " << cut);
    OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
    Scrollback scrollback;
    MotdCapture motd;
    pipeline.add(scrollback);
    pipeline.add(motd);
    pipeline.feed(std::string_view(stream).substr(0, cut));
    pipeline.feed(std::string_view(stream).substr(cut));
    CHECK(motd.complete());
    CHECK(motd.text() == "Welcome\nto the box\n");
    CHECK(scrollback.text() == "Welcome\nto the box\ndsh> later output\n");
  }
}

TEST_CASE("the motd keeps only its head when a shell prints megabytes before its prompt") {
  OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
  MotdCapture motd;
  pipeline.add(motd);
  const std::string line(1000, 'x');
  for (int i = 0; i < 200; ++i) pipeline.feed(line);
  CHECK_FALSE(motd.complete());
  CHECK(motd.text().size() == MotdCapture::kMaxBytes);
  pipeline.feed(MARK);
  CHECK(motd.complete());
  CHECK(motd.text().size() == MotdCapture::kMaxBytes);
}
