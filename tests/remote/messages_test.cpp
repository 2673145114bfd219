// The typed frames (backends/shell/link/messages.hpp): every frame round-trips through its
// struct, field by field and byte for byte; a frame cut short anywhere, or carrying a byte
// too many, decodes to nothing; an ERROR code the host does not know keeps its number (and
// the host reads it as the helper's failure), the known ones have names.
#include <doctest/doctest.h>

#include <string>

#include "link/messages.hpp"

using namespace dshpty::frames;

namespace {

// Encodes `f`, reads the bytes back as one frame of `type`, decodes its payload.
template <class F, class Encode>
std::optional<F> round_trip(Type type, Encode encode, std::string* bytes = nullptr) {
  std::string out;
  encode(out);
  if (bytes) *bytes = out;
  FrameReader reader;
  reader.feed(out);
  auto frame = reader.next();
  REQUIRE(frame);
  CHECK(frame->type == type);
  CHECK_FALSE(reader.next());
  CHECK(reader.buffered() == 0);
  return decode<F>(frame->payload);
}

template <class F>
std::optional<F> round_trip(Type type, const F& f, std::string* bytes = nullptr) {
  return round_trip<F>(type, [&](std::string& out) { encode(out, f); }, bytes);
}

// Every proper prefix of the frame's payload, and the payload with a byte more, decodes to nothing.
template <class F>
void every_cut_fails(const std::string& frame_bytes) {
  const std::string payload = frame_bytes.substr(5);
  for (std::size_t n = 0; n < payload.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(decode<F>(std::string_view(payload).substr(0, n)));
  }
  CHECK_FALSE(decode<F>(payload + "x"));
}

}  // namespace

TEST_CASE("host frames round-trip through their structs") {
  std::string bytes;
  auto hello = round_trip(Type::hello, Hello{kProtocolVersion, 10000, 30000}, &bytes);
  REQUIRE(hello);
  CHECK(hello->version == kProtocolVersion);
  CHECK(hello->ping_ms == 10000);
  CHECK(hello->link_timeout_ms == 30000);
  every_cut_fails<Hello>(bytes);

  Open open{40, 160, "pty-1", "xterm-256color", "/tmp", {"/bin/bash", "-i"}, {"A=b", "C"}};
  auto o = round_trip<Open>(Type::open, [&](std::string& out) { REQUIRE(encode(out, open)); }, &bytes);
  REQUIRE(o);
  CHECK(o->rows == 40);
  CHECK(o->cols == 160);
  CHECK(o->session_id == "pty-1");
  CHECK(o->term == "xterm-256color");
  CHECK(o->cwd == std::optional<std::string>("/tmp"));
  CHECK(o->argv == open.argv);
  CHECK(o->env == open.env);
  every_cut_fails<Open>(bytes);
  open.cwd.reset();
  o = round_trip<Open>(Type::open, [&](std::string& out) { REQUIRE(encode(out, open)); });
  REQUIRE(o);
  CHECK_FALSE(o->cwd);

  std::string in_bytes;
  encode_in(in_bytes, "echo hi\r");
  FrameReader in_reader;
  in_reader.feed(in_bytes);
  auto in_frame = in_reader.next();
  REQUIRE(in_frame);
  CHECK(in_frame->type == Type::in);
  auto in = decode<In>(in_frame->payload);
  REQUIRE(in);
  CHECK(in->bytes == "echo hi\r");

  auto resize = round_trip(Type::resize, Resize{50, 200}, &bytes);
  REQUIRE(resize);
  CHECK((resize->rows == 50 && resize->cols == 200));
  every_cut_fails<Resize>(bytes);

  auto signal = round_trip(Type::signal, Signal{-1234, 2}, &bytes);
  REQUIRE(signal);
  CHECK((signal->pgid == -1234 && signal->signo == 2));
  every_cut_fails<Signal>(bytes);

  auto mark = round_trip(Type::mark, Mark{2}, &bytes);
  REQUIRE(mark);
  CHECK(mark->mark == 2);
  every_cut_fails<Mark>(bytes);

  auto probe = round_trip(Type::probe, Probe{77}, &bytes);
  REQUIRE(probe);
  CHECK(probe->seq == 77);
  every_cut_fails<Probe>(bytes);

  auto ack = round_trip(Type::ack, Ack{1ull << 40}, &bytes);
  REQUIRE(ack);
  CHECK(ack->offset == 1ull << 40);
  every_cut_fails<Ack>(bytes);

  auto kill = round_trip(Type::kill, Kill{5000}, &bytes);
  REQUIRE(kill);
  CHECK(kill->grace_ms == 5000);
  every_cut_fails<Kill>(bytes);

  auto linger = round_trip(Type::linger, Linger{3600, 1 << 20, "/state", "alice", "", "ssh"}, &bytes);
  REQUIRE(linger);
  CHECK(linger->seconds == 3600);
  CHECK(linger->ring_bytes == 1 << 20);
  CHECK(linger->state_dir == "/state");
  CHECK(linger->owner == "alice");
  CHECK(linger->name.empty());
  CHECK(linger->type == "ssh");
  every_cut_fails<Linger>(bytes);

  auto attach = round_trip(Type::attach, Attach{"0123456789abcdef", "tok", "alice", true, 99}, &bytes);
  REQUIRE(attach);
  CHECK(attach->key == "0123456789abcdef");
  CHECK(attach->token == "tok");
  CHECK(attach->owner == "alice");
  CHECK(attach->resume);
  CHECK(attach->output_from == 99);
  every_cut_fails<Attach>(bytes);

  auto sending = round_trip(Type::sending, Sending{true}, &bytes);
  REQUIRE(sending);
  CHECK(sending->live);
  every_cut_fails<Sending>(bytes);

  auto take_back = round_trip(Type::take_back, TakeBack{12}, &bytes);
  REQUIRE(take_back);
  CHECK(take_back->own == 12);
  every_cut_fails<TakeBack>(bytes);

  auto shown = round_trip(Type::shown, Shown{4096}, &bytes);
  REQUIRE(shown);
  CHECK(shown->offset == 4096);
  every_cut_fails<Shown>(bytes);

  for (Type t : {Type::ping}) {
    std::string out;
    encode(out, Empty{t});
    FrameReader reader;
    reader.feed(out);
    auto f = reader.next();
    REQUIRE(f);
    CHECK(f->type == t);
    CHECK(decode_empty(f->payload));
    CHECK_FALSE(decode_empty("x"));
  }
}

TEST_CASE("helper frames round-trip through their structs") {
  std::string bytes;
  auto welcome = round_trip(Type::welcome, Welcome{kProtocolVersion, kCapTakeBack | kCapKeepsShown, helper_build()}, &bytes);
  REQUIRE(welcome);
  CHECK(welcome->version == kProtocolVersion);
  CHECK(welcome->capabilities == (kCapTakeBack | kCapKeepsShown));
  CHECK(welcome->build.rfind("dshpty-supervisor ", 0) == 0);
  CHECK(welcome->build.find("__DATE__") == std::string::npos);
  every_cut_fails<Welcome>(bytes);

  auto started = round_trip(Type::started, Started{4242}, &bytes);
  REQUIRE(started);
  CHECK(started->pid == 4242);
  every_cut_fails<Started>(bytes);

  auto failed = round_trip(Type::start_failed, StartFailed{"execve: No such file"}, &bytes);
  REQUIRE(failed);
  CHECK(failed->what == "execve: No such file");
  every_cut_fails<StartFailed>(bytes);

  // OUT and IN carry views into the payload: read while the reader holds it.
  std::string out_bytes;
  CHECK(encode_out(out_bytes, 10, "hello") == 15);
  FrameReader out_reader;
  out_reader.feed(out_bytes);
  auto out_frame = out_reader.next();
  REQUIRE(out_frame);
  CHECK(out_frame->type == Type::out);
  auto out = decode<Out>(out_frame->payload);
  REQUIRE(out);
  CHECK(out->offset == 10);
  CHECK(out->bytes == "hello");
  CHECK_FALSE(decode<Out>("1234567"));  // an offset cut short

  TerminalFacts facts{1234, kStateEcho | kStateModesKnown, 3, 1ull << 1, "/home/a"};
  auto state = round_trip(Type::state, State{7, 1 << 16, facts}, &bytes);
  REQUIRE(state);
  CHECK(state->seq == 7);
  CHECK(state->offset == 1 << 16);
  CHECK(state->facts == facts);
  every_cut_fails<State>(bytes);

  auto written = round_trip(Type::written, Written{123456}, &bytes);
  REQUIRE(written);
  CHECK(written->bytes == 123456);
  every_cut_fails<Written>(bytes);

  auto exited = round_trip(Type::exited, Exited{true, 9}, &bytes);
  REQUIRE(exited);
  CHECK(exited->by_signal);
  CHECK(exited->value == 9);
  every_cut_fails<Exited>(bytes);

  auto taken = round_trip(Type::taken, Taken{12, 5}, &bytes);
  REQUIRE(taken);
  CHECK((taken->own == 12 && taken->taken == 5));
  every_cut_fails<Taken>(bytes);

  auto lingering = round_trip(Type::lingering, Lingering{"0123456789abcdef", "tok"}, &bytes);
  REQUIRE(lingering);
  CHECK(lingering->key == "0123456789abcdef");
  CHECK(lingering->token == "tok");
  every_cut_fails<Lingering>(bytes);

  Attached attached{100, 200, 5, true, 4242, 77, "next", 150};
  auto a = round_trip(Type::attached, attached, &bytes);
  REQUIRE(a);
  CHECK(a->replay_from == 100);
  CHECK(a->replay_to == 200);
  CHECK(a->gap_bytes == 5);
  CHECK(a->send_was_live);
  CHECK(a->shell_pid == 4242);
  CHECK(a->input_received == 77);
  CHECK(a->next_token == "next");
  CHECK(a->shown == std::optional<std::uint64_t>(150));
  // An older helper's ATTACHED has no `shown`: it reads without it. Cut anywhere else, or
  // with the field cut short, it is no frame.
  const std::string payload = bytes.substr(5);
  auto older = decode<Attached>(std::string_view(payload).substr(0, payload.size() - 8));
  REQUIRE(older);
  CHECK_FALSE(older->shown);
  CHECK(older->next_token == "next");
  for (std::size_t n = 0; n < payload.size(); ++n) {
    CAPTURE(n);
    if (n != payload.size() - 8) CHECK_FALSE(decode<Attached>(std::string_view(payload).substr(0, n)));
  }
  CHECK_FALSE(decode<Attached>(payload + "x"));

  auto error = round_trip(Type::error, ErrorFrame{static_cast<std::uint32_t>(ErrorCode::session_gone), "gone"}, &bytes);
  REQUIRE(error);
  CHECK(error->code == 6);
  CHECK(error->text == "gone");
  every_cut_fails<ErrorFrame>(bytes);

  for (Type t : {Type::pong, Type::output_ended, Type::quiescent}) {
    std::string o;
    encode(o, Empty{t});
    CHECK(o == std::string("\x01\x00\x00\x00", 4) + static_cast<char>(t));
  }
}

TEST_CASE("IN and OUT are cut into frames of at most kMaxOutChunk bytes, offsets running on") {
  const std::string big(kMaxOutChunk * 2 + 10, 'y');
  std::string bytes;
  CHECK(encode_out(bytes, 1000, big) == 1000 + big.size());
  FrameReader reader;
  reader.feed(bytes);
  std::uint64_t at = 1000;
  std::string joined;
  int frames = 0;
  while (auto f = reader.next()) {
    auto out = decode<Out>(f->payload);
    REQUIRE(out);
    CHECK(out->offset == at);
    CHECK(out->bytes.size() <= kMaxOutChunk);
    at += out->bytes.size();
    joined += out->bytes;
    ++frames;
  }
  CHECK(frames == 3);
  CHECK(joined == big);
  std::string none;
  encode_in(none, "");
  CHECK(encode_out(none, 5, "") == 5);
  CHECK(none.empty());
}

TEST_CASE("an OPEN that cannot fit one frame is refused whole; a count past what a frame holds is no frame") {
  Open open{40, 160, "pty-1", "dumb", std::nullopt, {"/bin/sh"}, {std::string(kMaxFrame, 'e')}};
  std::string out = "kept";
  CHECK_FALSE(encode(out, open));
  CHECK(out == "kept");
  // argc says 2^31 entries: refused before anything is reserved for them.
  std::string payload;
  FrameWriter(payload).begin(Type::open).u16(1).u16(1).str("s").str("t").u8(0).str("").u32(0x80000000u).end();
  CHECK_FALSE(decode<Open>(std::string_view(payload).substr(5)));
}

TEST_CASE("ERROR codes: the known ones have names; an unknown one keeps its number") {
  CHECK(std::string(error_code_name(1)) == "VERSION_MISMATCH");
  CHECK(std::string(error_code_name(2)) == "HELPER_FAILED");
  CHECK(std::string(error_code_name(3)) == "PROTOCOL_ERROR");
  CHECK(std::string(error_code_name(4)) == "ATTACH_REFUSED");
  CHECK(std::string(error_code_name(5)) == "LINGER_UNSAFE");
  CHECK(std::string(error_code_name(6)) == "SESSION_GONE");
  CHECK(error_code_name(0) == nullptr);
  CHECK(error_code_name(7) == nullptr);
  // The wire numbers are fixed: helpers already deployed send them.
  CHECK(static_cast<std::uint32_t>(ErrorCode::attach_refused) == 4);
  CHECK(static_cast<std::uint32_t>(ErrorCode::session_gone) == 6);
  auto unknown = round_trip(Type::error, ErrorFrame{4242, "a newer helper's failure"});
  REQUIRE(unknown);
  CHECK(unknown->code == 4242);
  CHECK(unknown->text == "a newer helper's failure");
}

TEST_CASE("the jobs frames round-trip; their lists stay within one frame") {
  std::string bytes;
  auto w = round_trip(Type::watch_port, WatchPort{7, 8080}, &bytes);
  REQUIRE(w);
  CHECK((w->seq == 7 && w->port == 8080));
  every_cut_fails<WatchPort>(bytes);
  auto l = round_trip(Type::look, Look{9}, &bytes);
  REQUIRE(l);
  CHECK(l->seq == 9);
  every_cut_fails<Look>(bytes);
  auto s = round_trip(Type::stop, Stop{3, 1500, std::nullopt}, &bytes);
  REQUIRE(s);
  CHECK((s->seq == 3 && s->since_ms == 1500 && !s->input_at));
  every_cut_fails<Stop>(bytes);
  // With input_at (a helper with kCapStopAt): read when present; cut short, no frame.
  auto at = round_trip(Type::stop, Stop{4, 20, 1ull << 40}, &bytes);
  REQUIRE(at);
  CHECK((at->seq == 4 && at->since_ms == 20 && at->input_at == std::optional<std::uint64_t>(1ull << 40)));
  const std::string stop_payload = bytes.substr(5);
  for (std::size_t n = 0; n < stop_payload.size(); ++n) {
    CAPTURE(n);
    if (n != stop_payload.size() - 8) CHECK_FALSE(decode<Stop>(std::string_view(stop_payload).substr(0, n)));
  }
  CHECK_FALSE(decode<Stop>(stop_payload + "x"));

  auto seen = round_trip(Type::port_seen, PortSeen{7, 8080, 4242, "::1"}, &bytes);
  REQUIRE(seen);
  CHECK((seen->seq == 7 && seen->port == 8080 && seen->pid == 4242 && seen->address == "::1"));
  every_cut_fails<PortSeen>(bytes);

  Tree tree{5, true, 6, {{5173, "127.0.0.1", 99, "node"}, {8000, "::", 100, "python3"}}};
  auto t = round_trip(Type::tree, tree, &bytes);
  REQUIRE(t);
  CHECK((t->seq == 5 && t->known && t->processes == 6 && t->listening == tree.listening));
  every_cut_fails<Tree>(bytes);
  auto unknown = round_trip(Type::tree, Tree{6, false, 0, {}}, &bytes);
  REQUIRE(unknown);
  CHECK((unknown->seq == 6 && !unknown->known && unknown->listening.empty()));
  every_cut_fails<Tree>(bytes);

  Stopped stopped{4, "", false, {"SIGINT", "SIGTERM", "SIGKILL"}, {{77, "sleep", "uninterruptible sleep (D)"}}};
  auto st = round_trip(Type::stopped, stopped, &bytes);
  REQUIRE(st);
  CHECK((st->seq == 4 && st->refused.empty() && !st->stopped && st->signals == stopped.signals &&
         st->remaining == stopped.remaining));
  every_cut_fails<Stopped>(bytes);
  auto refused = round_trip(Type::stopped, Stopped{8, "stop: the session's shell is gone", false, {}, {}});
  REQUIRE(refused);
  CHECK(refused->refused == "stop: the session's shell is gone");

  // A tree listening on thousands of ports, thousands of survivors: the first ones, one frame.
  Tree big{1, true, 20000, {}};
  for (int i = 0; i < 20000; ++i) big.listening.push_back({static_cast<std::uint16_t>(i), "127.0.0.1", i, "server"});
  auto b = round_trip(Type::tree, big, &bytes);
  REQUIRE(b);
  CHECK(bytes.size() <= kMaxFrame + 4);
  CHECK((!b->listening.empty() && b->listening.size() < big.listening.size()));
  CHECK(b->listening.front() == big.listening.front());
  Stopped many{2, "", false, {"SIGINT"}, {}};
  for (int i = 0; i < 20000; ++i) many.remaining.push_back({i, "stuck", "alive after SIGKILL"});
  auto m = round_trip(Type::stopped, many, &bytes);
  REQUIRE(m);
  CHECK(bytes.size() <= kMaxFrame + 4);
  CHECK((m->signals == many.signals && !m->remaining.empty() && m->remaining.size() < many.remaining.size()));

  for (Type type : {Type::watch_port, Type::look, Type::stop, Type::port_seen, Type::tree, Type::stopped})
    CHECK(type_name(static_cast<std::uint8_t>(type)) != nullptr);
}

TEST_CASE("OPEN carries limits as trailing fields only when one is set; LIMIT_HIT names pids or memory") {
  Open open{40, 160, "pty-1", "dumb", std::nullopt, {"/bin/sh"}, {}};
  std::string plain;
  REQUIRE(encode(plain, open));
  open.limit_pids = 64;
  open.limit_memory = 96u << 20;
  open.limit_cpu_us = 50'000;
  std::string limited;
  REQUIRE(encode(limited, open));
  CHECK(limited.size() == plain.size() + 24);  // nothing added without a limit
  auto o = decode<Open>(std::string_view(limited).substr(5));
  REQUIRE(o);
  CHECK(o->limit_pids == 64);
  CHECK(o->limit_memory == (96u << 20));
  CHECK(o->limit_cpu_us == 50'000);
  auto p = decode<Open>(std::string_view(plain).substr(5));
  REQUIRE(p);
  CHECK_FALSE(p->has_limits());
  // Limits cut short, or all zero (never written so), are no OPEN.
  const std::string payload = limited.substr(5);
  for (std::size_t n = plain.size() - 5 + 1; n < payload.size(); ++n) CHECK_FALSE(decode<Open>(std::string_view(payload).substr(0, n)));
  CHECK_FALSE(decode<Open>(plain.substr(5) + std::string(24, '\0')));
  CHECK_FALSE(decode<Open>(payload + "x"));

  std::string bytes;
  auto hit = round_trip(Type::limit_hit, LimitHitFrame{2}, &bytes);
  REQUIRE(hit);
  CHECK(hit->kind == 2);
  every_cut_fails<LimitHitFrame>(bytes);
  CHECK_FALSE(decode<LimitHitFrame>(std::string(1, '\3')));
  CHECK(std::string(type_name(static_cast<std::uint8_t>(Type::limit_hit))) == "LIMIT_HIT");
}
