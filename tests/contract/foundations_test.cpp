// The foundation headers the contract leans on: the error table, abort signals (identity,
// any(), unsubscribing during an abort) and Deferred's FIFO / next-turn semantics.
#include <cerrno>
#include <set>

#include "contract_helpers.hpp"
#include "dshpty/loop.hpp"

using namespace contract;

TEST_CASE("errors: every code has its wire name and default message from one table") {
  struct Row {
    Code code;
    const char* name;
    const char* message;
  };
  const Row rows[] = {
      {Code::DUPLICATE_BACKEND, "DUPLICATE_BACKEND", "PTY backend type is already registered"},
      {Code::DUPLICATE_NAME, "DUPLICATE_NAME", "PTY session name already exists for this owner"},
      {Code::FOREIGN_SESSION, "FOREIGN_SESSION", "PTY session ID belongs to another agent"},
      {Code::NO_BACKEND, "NO_BACKEND", "no PTY backend is registered for that type"},
      {Code::NO_SESSION, "NO_SESSION", "unknown PTY session ID"},
      {Code::OWNER_NOT_LIVE, "OWNER_NOT_LIVE", "PTY owner is no longer live"},
      {Code::SEND_ACTIVE, "SEND_ACTIVE", "a send is already live on this PTY session"},
      {Code::SERVICE_DISPOSING, "SERVICE_DISPOSING", "PTY service is disposing"},
      {Code::SESSION_CLOSING, "SESSION_CLOSING", "PTY session is closing"},
      {Code::SESSION_EXITED, "SESSION_EXITED", "PTY session has exited"},
      {Code::INVALID_ARGUMENT, "INVALID_ARGUMENT", "invalid argument"},
      {Code::BACKEND_FAILED, "BACKEND_FAILED", "PTY backend failed"},
      {Code::BACKEND_CLEANUP_FAILED, "BACKEND_CLEANUP_FAILED",
       "PTY backend failed and its cleanup failed too"},
      {Code::CLEANUP_FAILED, "CLEANUP_FAILED", "failed to clean up PTY lifecycle"},
      {Code::ABORTED, "ABORTED", "operation aborted"},
  };
  std::set<std::string_view> names;
  for (const Row& row : rows) {
    CAPTURE(row.name);
    CHECK(code_name(row.code) == row.name);
    CHECK(default_message(row.code) == row.message);
    Error e = make_error(row.code);
    REQUIRE(e);
    CHECK(e->code == row.code);
    CHECK(e->message == row.message);
    CHECK(e->errors.empty());
    CHECK(e->sys_errno == 0);
    names.insert(code_name(row.code));
  }
  CHECK(names.size() == std::size(rows));
  CHECK(code_name(static_cast<Code>(9999)) == "UNKNOWN");
  CHECK_FALSE(default_message(static_cast<Code>(-1)).empty());
}

TEST_CASE("errors: identity, aggregates, system errors, cleanup errors, describe") {
  Error a = make_error(Code::ABORTED);
  Error b = make_error(Code::ABORTED);
  CHECK(a != b);  // identity: equal contents are still two errors
  Error agg = make_error(Code::CLEANUP_FAILED, "outer", {a, b});
  REQUIRE(agg->errors.size() == 2);
  CHECK(agg->errors[0] == a);
  CHECK(agg->errors[1] == b);

  Error sys = make_system_error(Code::BACKEND_FAILED, "openpty", EMFILE);
  CHECK(sys->sys_errno == EMFILE);
  CHECK(sys->message.rfind("openpty: ", 0) == 0);

  Error spawn = make_error(Code::BACKEND_FAILED, "spawn broke");
  Error cleanup = make_error(Code::BACKEND_FAILED, "cleanup broke");
  Error both = make_backend_cleanup_error(spawn, cleanup);
  CHECK(both->code == Code::BACKEND_CLEANUP_FAILED);
  REQUIRE(both->errors.size() == 2);
  CHECK(both->errors[0] == spawn);
  CHECK(both->errors[1] == cleanup);
  CHECK(is_backend_cleanup_error(both));
  CHECK_FALSE(is_backend_cleanup_error(spawn));
  CHECK_FALSE(is_backend_cleanup_error(nullptr));
  CHECK_FALSE(is_backend_cleanup_error(make_error(Code::BACKEND_CLEANUP_FAILED)));

  std::string text = describe(agg);
  CHECK(text == "CLEANUP_FAILED: outer\n  ABORTED: operation aborted\n  ABORTED: operation aborted");
  CHECK(describe(nullptr) == "OK");
}

TEST_CASE("abort: a controller aborts once with its exact reason and runs subscribers once") {
  AbortController c;
  AbortSignal s = c.signal();
  AbortSignal copy = s;
  CHECK_FALSE(s.aborted());
  CHECK(s.reason() == nullptr);
  int calls = 0;
  Error seen;
  auto sub = s.subscribe([&](const Error& why) {
    ++calls;
    seen = why;
  });
  Error reason = make_error(Code::ABORTED, "stop");
  CHECK(c.abort(reason));
  CHECK(calls == 1);
  CHECK(seen == reason);
  CHECK(s.aborted());
  CHECK(copy.aborted());
  CHECK(s.reason() == reason);
  CHECK_FALSE(c.abort(make_error(Code::ABORTED)));
  CHECK(s.reason() == reason);
  CHECK(calls == 1);

  // Subscribing to an aborted signal calls nothing.
  int late = 0;
  auto none = s.subscribe([&](const Error&) { ++late; });
  CHECK(late == 0);

  AbortSignal never;
  CHECK_FALSE(never.aborted());
  CHECK(never.reason() == nullptr);
  auto idle = never.subscribe([&](const Error&) { ++late; });
  CHECK(late == 0);
}

TEST_CASE("abort: dropping or resetting a subscription unsubscribes") {
  AbortController c;
  int calls = 0;
  {
    auto sub = c.signal().subscribe([&](const Error&) { ++calls; });
  }
  auto kept = c.signal().subscribe([&](const Error&) { calls += 10; });
  auto reset = c.signal().subscribe([&](const Error&) { calls += 100; });
  reset.reset();
  c.abort(make_error(Code::ABORTED));
  CHECK(calls == 10);
}

TEST_CASE("abort: a subscriber may unsubscribe another during the abort") {
  AbortController c;
  int first = 0, second = 0, third = 0;
  AbortSubscription sub2;
  AbortSubscription sub3;
  auto sub1 = c.signal().subscribe([&](const Error&) {
    ++first;
    sub2.reset();  // not called afterwards
  });
  sub2 = c.signal().subscribe([&](const Error&) { ++second; });
  sub3 = c.signal().subscribe([&](const Error&) {
    ++third;
    sub3.reset();  // unsubscribing itself during its own call is harmless
  });
  c.abort(make_error(Code::ABORTED));
  CHECK(first == 1);
  CHECK(second == 0);
  CHECK(third == 1);
}

TEST_CASE("abort: any() takes the first input's exact reason") {
  AbortController a, b;
  AbortSignal both = AbortSignal::any({a.signal(), b.signal()});
  CHECK_FALSE(both.aborted());
  int calls = 0;
  auto sub = both.subscribe([&](const Error&) { ++calls; });
  Error rb = make_error(Code::OWNER_NOT_LIVE);
  b.abort(rb);
  CHECK(both.aborted());
  CHECK(both.reason() == rb);
  CHECK(calls == 1);
  a.abort(make_error(Code::ABORTED));
  CHECK(both.reason() == rb);
  CHECK(calls == 1);

  // Already aborted inputs: the first of them in order.
  AbortController x, y, z;
  Error ry = make_error(Code::ABORTED, "y");
  Error rz = make_error(Code::ABORTED, "z");
  z.abort(rz);
  y.abort(ry);
  AbortSignal pre = AbortSignal::any({x.signal(), y.signal(), z.signal()});
  CHECK(pre.aborted());
  CHECK(pre.reason() == ry);

  CHECK_FALSE(AbortSignal::any({}).aborted());
  CHECK_FALSE(AbortSignal::any({AbortSignal{}}).aborted());
}

TEST_CASE("abort: any() does not keep its inputs' controllers alive, nor they it") {
  AbortSignal combined;
  std::weak_ptr<int> probe;
  {
    AbortController a;
    combined = AbortSignal::any({a.signal()});
  }
  CHECK_FALSE(combined.aborted());  // the input's controller is gone; nothing to fire

  AbortController a;
  {
    AbortSignal temp = AbortSignal::any({a.signal()});
    auto sub = temp.subscribe([](const Error&) {});
  }
  // The combined signal died: aborting its input must be harmless.
  CHECK(a.abort(make_error(Code::ABORTED)));
}

TEST_CASE("Deferred: runs in FIFO order from the loop, a re-post after its batch") {
  Loop l;
  Deferred d(l.loop);
  CHECK(d.loop() == l.loop);
  std::vector<int> order;
  d.post([&] { order.push_back(1); });
  d.post([&] {
    order.push_back(2);
    d.post([&] { order.push_back(4); });  // posted while running: after this batch
    CHECK(order == std::vector<int>{1, 2});  // never inside post()
  });
  d.post([&] { order.push_back(3); });
  CHECK(order.empty());  // never inside post()
  CHECK(d.pending() == 3);
  REQUIRE(run_until(l.loop, [&] { return order.size() == 4; }));
  CHECK(order == std::vector<int>{1, 2, 3, 4});
  CHECK(d.pending() == 0);
}

// One watcher's callback posts to `d` and records the loop's iteration.
struct PostingWatcher {
  ev_timer timer;
  Deferred* d = nullptr;
  std::vector<std::string>* events = nullptr;
  unsigned posted_in = 0;
  unsigned ran_in = 0;

  static void on_timer(struct ev_loop* loop, ev_timer* w, int) {
    auto* self = static_cast<PostingWatcher*>(w->data);
    self->posted_in = ev_iteration(loop);
    self->d->post([self, loop] {
      self->ran_in = ev_iteration(loop);
      self->events->push_back("deferred");
    });
    self->events->push_back("callback returns");
  }
};

TEST_CASE("Deferred: a post from a loop callback runs in the same pass, once the callback returned") {
  // Whatever the posting callback's priority: a feed must never wait through the next poll
  // (the loop below has nothing else to wake it).
  for (int priority : {EV_MINPRI, 0, EV_MAXPRI}) {
    CAPTURE(priority);
    Loop l;
    Deferred d(l.loop);
    std::vector<std::string> events;
    PostingWatcher w;
    w.d = &d;
    w.events = &events;
    ev_timer_init(&w.timer, &PostingWatcher::on_timer, 0., 0.);
    ev_set_priority(&w.timer, priority);
    w.timer.data = &w;
    ev_timer_start(l.loop, &w.timer);
    // One blocking iteration: the timer fires, and the post must run before ev_run returns.
    ev_run(l.loop, EVRUN_ONCE);
    CHECK(events == std::vector<std::string>{"callback returns", "deferred"});
    CHECK(w.ran_in == w.posted_in);
    CHECK(d.pending() == 0);
  }
}

TEST_CASE("Deferred: queues posting to each other without end still let the loop poll") {
  Loop l;
  Deferred a(l.loop);
  Deferred b(l.loop);
  long runs = 0;
  bool stop = false;
  std::function<void()> to_a;
  // Unbounded feeding would spin inside one ev_run: the cap ends that spin, and the checks
  // below fail it.
  std::function<void()> to_b = [&] {
    if (++runs > 100000) stop = true;
    if (!stop) a.post(to_a);
  };
  to_a = [&] {
    if (++runs > 100000) stop = true;
    if (!stop) b.post(to_b);
  };
  // A timer started after the ping-pong: it fires only if the loop polls again.
  struct Seen {
    const long* runs;
    long at = -1;
  } seen{&runs};
  ev_timer t;
  ev_timer_init(
      &t,
      [](struct ev_loop*, ev_timer* w, int) {
        auto* s = static_cast<Seen*>(w->data);
        s->at = *s->runs;
      },
      0., 0.);
  t.data = &seen;
  a.post(to_a);
  ev_run(l.loop, EVRUN_NOWAIT);  // the first run: from here on each post feeds the other
  CHECK(runs > 2);               // it did chain within a pass
  ev_timer_start(l.loop, &t);
  REQUIRE(run_until(l.loop, [&] { return seen.at >= 0; }, 10));
  CHECK(seen.at < 1000);
  stop = true;
  turn(l.loop);
}

TEST_CASE("Deferred: destruction drops pending callbacks, also from inside a callback") {
  Loop l;
  int ran = 0;
  {
    Deferred d(l.loop);
    d.post([&] { ++ran; });
  }
  turn(l.loop);
  CHECK(ran == 0);

  auto d = std::make_unique<Deferred>(l.loop);
  d->post([&] {
    ++ran;
    d.reset();
  });
  d->post([&] { ran += 100; });
  REQUIRE(run_until(l.loop, [&] { return ran > 0; }));
  turn(l.loop);
  CHECK(ran == 1);
}
