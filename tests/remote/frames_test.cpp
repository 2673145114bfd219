// The stream protocol's framing (backends/shell/link/frames.hpp): every frame type
// round-trips; a stream split at any byte gives the same frames; malformed input of every
// kind is a clear error (and no frame), never a crash or a read past the end.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "link/frames.hpp"

using namespace dshpty::frames;

namespace {

struct Seen {
  Type type;
  std::string payload;
  bool operator==(const Seen&) const = default;
};

// Feeds `stream` in pieces cut at `cuts` (ascending positions) and collects the frames.
std::vector<Seen> read_all(const std::string& stream, const std::vector<std::size_t>& cuts, std::string* error = nullptr) {
  FrameReader reader;
  std::vector<Seen> seen;
  std::size_t at = 0;
  auto take = [&] {
    while (auto f = reader.next()) seen.push_back({f->type, std::string(f->payload)});
  };
  for (std::size_t cut : cuts) {
    reader.feed(std::string_view(stream).substr(at, cut - at));
    take();
    at = cut;
  }
  reader.feed(std::string_view(stream).substr(at));
  take();
  if (error) *error = reader.error();
  return seen;
}

std::string sample_stream() {
  std::string s;
  FrameWriter w(s);
  w.begin(Type::hello).u32(kProtocolVersion).u32(10000).u32(30000).end();
  w.begin(Type::open).u16(40).u16(160).str("pty-1").str("dumb").u8(1).str("/tmp").u32(2).str("/bin/bash").str("-i").u32(1).str("A=b").end();
  w.begin(Type::in).raw("echo hi\r").end();
  w.begin(Type::ping).end();
  w.begin(Type::out).u64(0).raw(std::string(kMaxOutChunk, 'x')).end();
  w.begin(Type::state).u32(7).u64(kMaxOutChunk).i32(1234).u8(kStateEcho | kStateCanonical).i32(0).u64(2).str("/tmp").end();
  w.begin(Type::exited).u8(0).i32(3).end();
  w.begin(Type::quiescent).end();
  return s;
}

}  // namespace

TEST_CASE("every frame type has a name; bytes outside them have none") {
  for (int t = 0; t < 256; ++t) {
    const bool host = t >= static_cast<int>(Type::hello) && t <= static_cast<int>(Type::stop);
    const bool helper = t >= static_cast<int>(Type::welcome) && t <= static_cast<int>(Type::limit_hit);
    CAPTURE(t);
    CHECK((type_name(static_cast<std::uint8_t>(t)) != nullptr) == (host || helper));
  }
}

TEST_CASE("a payload reads back as it was written") {
  std::string s;
  FrameWriter(s).begin(Type::state).u32(9).u64(1ull << 40).i32(-1).u8(5).i32(-1).u64(~0ull).str("dir").end();
  FrameReader r;
  r.feed(s);
  auto f = r.next();
  REQUIRE(f);
  CHECK(f->type == Type::state);
  PayloadReader p(f->payload);
  CHECK(p.u32() == 9);
  CHECK(p.u64() == 1ull << 40);
  CHECK(p.i32() == -1);
  CHECK(p.u8() == 5);
  CHECK(p.i32() == -1);
  CHECK(p.u64() == ~0ull);
  CHECK(p.str() == "dir");
  CHECK(p.done());
  CHECK_FALSE(r.next());
  CHECK(r.error().empty());
}

TEST_CASE("a stream cut at every byte gives the same frames") {
  const std::string stream = sample_stream();
  const auto whole = read_all(stream, {});
  REQUIRE(whole.size() == 8);
  CHECK(whole[2] == Seen{Type::in, "echo hi\r"});
  for (std::size_t cut = 1; cut < stream.size(); ++cut) {
    std::string error;
    auto seen = read_all(stream, {cut}, &error);
    if (seen != whole || !error.empty()) FAIL("cut at byte " << cut);
  }
  // And byte by byte.
  std::vector<std::size_t> every;
  for (std::size_t i = 1; i < stream.size(); ++i) every.push_back(i);
  CHECK(read_all(stream, every) == whole);
}

TEST_CASE("malformed streams: a clear error, no frame, never a crash") {
  auto error_of = [](std::string bytes) {
    std::string error;
    auto seen = read_all(bytes, {}, &error);
    CHECK(seen.empty());
    return error;
  };
  CHECK(error_of(std::string("\0\0\0\0\x01", 5)) == "frame length 0 outside 1..65536");
  CHECK(error_of(std::string("\x01\x00\x01\x00\x03", 5)) == "frame length 65537 outside 1..65536");
  CHECK(error_of("\xff\xff\xff\xff") == "frame length 4294967295 outside 1..65536");
  CHECK(error_of(std::string("\x01\0\0\0\xc8", 5)) == "unknown frame type 200");
  CHECK(error_of(std::string("\x01\0\0\0\0", 5)) == "unknown frame type 0");
  // A truncated stream is no error yet, and no frame: more bytes may come.
  std::string stream = sample_stream();
  FrameReader r;
  r.feed(std::string_view(stream).substr(0, 7));
  CHECK_FALSE(r.next());
  CHECK(r.error().empty());
  CHECK(r.buffered() == 7);
  // After an error nothing more is read, whatever follows.
  FrameReader bad;
  bad.feed("\xff\xff\xff\xff");
  CHECK_FALSE(bad.next());
  bad.feed(stream);
  CHECK_FALSE(bad.next());
  CHECK_FALSE(bad.error().empty());
}

TEST_CASE("payloads short, long, or with a string longer than the frame fail the reader") {
  PayloadReader short_one(std::string_view("\x01\x02", 2));
  CHECK(short_one.u32() == 0);
  CHECK(short_one.failed());
  CHECK_FALSE(short_one.done());

  PayloadReader long_one(std::string_view("\x01\0\0\0\x09", 5));
  CHECK(long_one.u32() == 1);
  CHECK_FALSE(long_one.failed());
  CHECK_FALSE(long_one.done());  // a byte left over: not this frame's shape

  PayloadReader huge_string(std::string_view("\xff\xff\xff\x7f" "abc", 7));
  CHECK(huge_string.str().empty());
  CHECK(huge_string.failed());
  // Once failed, every read gives zeros and rest() nothing.
  CHECK(huge_string.u64() == 0);
  CHECK(huge_string.rest().empty());

  PayloadReader empty(std::string_view{});
  CHECK(empty.done());
  CHECK(empty.u8() == 0);
  CHECK(empty.failed());
}

TEST_CASE("take_rest hands over what follows the frames read, whatever the split") {
  std::string stream;
  FrameWriter(stream).begin(Type::hello).u32(kProtocolVersion).u32(0).u32(0).end();
  FrameWriter(stream).begin(Type::attach).str("0123456789abcdef").str("token").str("owner").u8(1).u64(42).end();
  std::string after;
  FrameWriter(after).begin(Type::ping).end();
  FrameWriter(after).begin(Type::in).raw("typed").end();
  const std::string whole = stream + after;
  // A relay reads up to ATTACH and passes everything after it on unread, even a frame cut
  // in half by the read that brought the ATTACH.
  for (std::size_t cut = stream.size(); cut <= whole.size(); ++cut) {
    CAPTURE(cut);
    FrameReader reader;
    reader.feed(std::string_view(whole).substr(0, cut));
    auto hello = reader.next();
    REQUIRE(hello);
    CHECK(hello->type == Type::hello);
    auto attach = reader.next();
    REQUIRE(attach);
    CHECK(attach->type == Type::attach);
    PayloadReader r(attach->payload);
    CHECK(r.str() == "0123456789abcdef");
    CHECK(r.str() == "token");
    CHECK(r.str() == "owner");
    CHECK(r.u8() == 1);
    CHECK(r.u64() == 42);
    CHECK(r.done());
    std::string rest = reader.take_rest();
    CHECK(reader.buffered() == 0);
    rest += whole.substr(cut);
    CHECK(rest == after);
  }
}
