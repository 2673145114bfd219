// End to end through the Service: the shell backend registered, a session spawned, a send,
// a read, a kill, and an owner disposal, each leaving no process behind.
#include <doctest/doctest.h>

#include "dshpty/service.hpp"
#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

struct ServiceFixture : ShellFixture {
  Service service{loop()};
  Owner owner = service.mint_owner("agent");
  ServiceFixture() {
    auto reg = service.register_backend(make_shell_backend(loop(), config()));
    REQUIRE(reg);
  }
  ~ServiceFixture() {
    bool done = false;
    service.dispose([&](Status) { done = true; });
    run_until(loop(), [&] { return done; }, 30s);
  }

  Result<SpawnResult> spawn(std::optional<std::string> name = {}) {
    bool done = false;
    Result<SpawnResult> out = make_error(Code::BACKEND_FAILED, "pending");
    SpawnOptions opts;
    opts.type = "shell";
    opts.name = std::move(name);
    service.spawn(owner, opts, [&](Result<SpawnResult> r) {
      done = true;
      out = std::move(r);
    });
    run_until(loop(), [&] { return done; }, 30s);
    return out;
  }
};

}  // namespace

TEST_CASE("through the Service: spawn, send, read, kill") {
  ServiceFixture fx;
  auto spawned = fx.spawn("main");
  REQUIRE_MESSAGE(spawned, describe(spawned.error()));
  const std::string id = spawned->session.id;
  CHECK(spawned->session.type == "shell");
  CHECK(spawned->session.pid.has_value());
  CHECK(spawned->session.status.running());

  bool done = false;
  Result<SendResult> result = make_error(Code::BACKEND_FAILED, "pending");
  SendRequest req;
  req.text = "echo through-the-service";
  auto send = fx.service.start_send(fx.owner, id, req, [&](Result<SendResult> r) {
    done = true;
    result = std::move(r);
  });
  REQUIRE(send);
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  REQUIRE_MESSAGE(result, describe(result.error()));
  CHECK(result->wait_reason == WaitReason::stdin_read);
  CHECK(result->viewport.find("through-the-service\n") != std::string::npos);
  auto delta = (*send)->read_output();
  CHECK(delta.text.find("through-the-service") != std::string::npos);

  auto page = fx.service.read(fx.owner, id, {});
  REQUIRE(page);
  CHECK(page->text.find("through-the-service") != std::string::npos);

  // Leave escapees behind, then kill through the Service.
  done = false;
  req.text = "setsid sleep 300 & nohup sleep 300 >/dev/null 2>&1 &";
  send = fx.service.start_send(fx.owner, id, req, [&](Result<SendResult> r) {
    done = true;
    result = std::move(r);
  });
  REQUIRE(send);
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 2; }));

  bool killed = false;
  Result<bool> kill_result = make_error(Code::BACKEND_FAILED, "pending");
  REQUIRE(fx.service.kill(fx.owner, id, [&](Result<bool> r) {
    killed = true;
    kill_result = std::move(r);
  }).ok());
  REQUIRE(run_until(fx.loop(), [&] { return killed; }));
  REQUIRE_MESSAGE(kill_result, describe(kill_result.error()));
  CHECK(*kill_result);
  CHECK(fx.service.list(fx.owner).empty());
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}

TEST_CASE("through the Service: disposing the owner closes its sessions, sends in flight too") {
  ServiceFixture fx;
  auto a = fx.spawn("a");
  auto b = fx.spawn("b");
  REQUIRE_MESSAGE(a, describe(a.error()));
  REQUIRE_MESSAGE(b, describe(b.error()));
  bool send_done = false;
  Result<SendResult> send_result = make_error(Code::BACKEND_FAILED, "pending");
  SendRequest req;
  req.text = "sleep 300";
  auto send = fx.service.start_send(fx.owner, a->session.id, req, [&](Result<SendResult> r) {
    send_done = true;
    send_result = std::move(r);
  });
  REQUIRE(send);
  REQUIRE(run_until(fx.loop(), [&] { return marked_processes_named(fx.marker(), "sleep").size() == 1; }));
  CHECK(fx.service.has_owner_activity(fx.owner));

  bool disposed = false;
  Status dispose_status = make_error(Code::BACKEND_FAILED, "pending");
  fx.service.dispose_owner(fx.owner, [&](Status st) {
    disposed = true;
    dispose_status = st;
  });
  REQUIRE(run_until(fx.loop(), [&] { return disposed; }));
  CHECK_MESSAGE(dispose_status.ok(), (dispose_status ? "" : describe(dispose_status.error())));
  CHECK(send_done);
  REQUIRE_FALSE(send_result);
  CHECK(send_result.error()->code == Code::SESSION_CLOSING);
  CHECK_FALSE(fx.service.has_owner_activity(fx.owner));
  CHECK(marked_processes(fx.marker()).empty());
  CHECK(zombie_children().empty());
}

TEST_CASE("through the Service: an aborted spawn rejects with the caller's exact reason") {
  ServiceFixture fx;
  AbortController controller;
  Error reason = make_error(Code::ABORTED, "caller gave up");
  bool done = false;
  Result<SpawnResult> out = make_error(Code::BACKEND_FAILED, "pending");
  SpawnOptions opts;
  opts.type = "shell";
  opts.signal = controller.signal();
  fx.service.spawn(fx.owner, opts, [&](Result<SpawnResult> r) {
    done = true;
    out = std::move(r);
  });
  // Abort once the shell is running but before its first prompt was seen, if we catch it.
  run_until(fx.loop(), [&] { return done || !marked_processes(fx.marker()).empty(); });
  controller.abort(reason);
  REQUIRE(run_until(fx.loop(), [&] { return done; }));
  REQUIRE_FALSE(out);
  CHECK(out.error() == reason);
  CHECK(fx.service.records().empty());
  CHECK(marked_processes(fx.marker()).empty());
}

namespace {

struct Read {
  std::string text;
  std::uint64_t next = 0, dropped = 0;
  bool done = false;
  friend bool operator==(const Read&, const Read&) = default;
};

// Every read by (offset, max_bytes) of `send` that `offsets` names, as a comparable list.
std::vector<std::optional<Read>> reads_of(Send& send, const std::vector<std::uint64_t>& offsets) {
  std::vector<std::optional<Read>> out;
  for (std::uint64_t offset : offsets)
    for (std::size_t max : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{1} << 30}) {
      auto r = send.output(offset, max);
      if (!r) {
        out.push_back(std::nullopt);
        continue;
      }
      out.push_back(Read{r->text, r->next_offset, r->dropped_bytes, r->done});
    }
  return out;
}

}  // namespace

TEST_CASE("through the Service: a send's output stays readable by offset after its session closed") {
  ServiceFixture fx;
  auto spawned = fx.spawn("jobs");
  REQUIRE_MESSAGE(spawned, describe(spawned.error()));
  const std::string id = spawned->session.id;

  // An ended job whose output has characters of 2 and 3 bytes, read at every offset.
  bool ended = false;
  SendRequest req;
  req.background = true;
  req.text = R"(printf 'a\303\251b\342\202\254c\n')";
  auto small = fx.service.start_send(fx.owner, id, req, [&](Result<SendResult>) { ended = true; });
  REQUIRE(small);
  REQUIRE(run_until(fx.loop(), [&] { return ended; }));
  Send& a = **small;
  const std::uint64_t a_end = a.output_end();
  REQUIRE(a_end > 0);
  std::vector<std::uint64_t> every;
  for (std::uint64_t o = 0; o <= a_end + 1; ++o) every.push_back(o);
  const auto a_before = reads_of(a, every);

  // A running job past the window (1 MiB): a reader from 0 is told what it lost.
  bool flood_settled = false;
  Result<SendResult> flood_result = make_error(Code::BACKEND_FAILED, "pending");
  req.text = "seq 1 300000; echo flood-$((6*7)); sleep 300";
  auto flood = fx.service.start_send(fx.owner, id, req, [&](Result<SendResult> r) {
    flood_settled = true;
    flood_result = std::move(r);
  });
  REQUIRE(flood);
  Send& b = **flood;
  auto tail_has_end = [&] {
    const std::uint64_t end = b.output_end();
    auto tail = b.output(end > 64 ? end - 64 : 0, 64);
    return tail && tail->text.find("flood-42") != std::string::npos;
  };
  REQUIRE(run_until(fx.loop(), tail_has_end, 30s));
  const std::uint64_t b_end = b.output_end();
  auto oldest = b.output(0, 1);
  REQUIRE(oldest);
  const std::uint64_t b_begin = oldest->dropped_bytes;
  REQUIRE(b_begin > 0);
  const std::vector<std::uint64_t> edges{0, b_begin - 1, b_begin, b_begin + 1, b_end - 10, b_end - 1, b_end, b_end + 1};
  const auto b_before = reads_of(b, edges);

  bool killed = false;
  REQUIRE(fx.service.kill(fx.owner, id, [&](Result<bool>) { killed = true; }).ok());
  REQUIRE(run_until(fx.loop(), [&] { return killed && flood_settled; }));
  REQUIRE_FALSE(flood_result);
  CHECK(flood_result.error()->code == Code::SESSION_CLOSING);

  // The same bytes, offsets and losses as before, every read now done; past the end refused.
  CHECK(a.output_end() == a_end);
  CHECK(b.output_end() == b_end);
  auto all_done = [](std::vector<std::optional<Read>> reads) {
    for (auto& r : reads)
      if (r) r->done = true;
    return reads;
  };
  CHECK(reads_of(a, every) == all_done(a_before));
  CHECK(reads_of(b, edges) == all_done(b_before));
  auto whole = a.output(0, 1 << 20);
  REQUIRE(whole);
  CHECK(whole->text.find("a\303\251b\342\202\254c") != std::string::npos);
  CHECK(whole->next_offset == a_end);
  CHECK(whole->dropped_bytes == 0);
  auto past = b.output(b_end + 1, 16);
  REQUIRE_FALSE(past);
  CHECK(past.error()->code == Code::INVALID_ARGUMENT);
  auto lost = b.output(0, 1 << 30);
  REQUIRE(lost);
  CHECK(lost->dropped_bytes == b_begin);
  CHECK(lost->dropped_bytes + lost->text.size() == b_end);
  CHECK(lost->text.find("flood-42") != std::string::npos);
  CHECK(lost->done);
  CHECK(marked_processes(fx.marker()).empty());
}
