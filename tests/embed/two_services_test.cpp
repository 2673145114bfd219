// Consumption path 4: one process, two loops, two services that know nothing of each
// other. Each completes only from its own loop, owners and ids do not cross, and disposing
// one leaves the other working. The scripted cases need no shell; the last case runs a
// real shell session on each loop.
#include <doctest/doctest.h>
#include <ev.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <dshpty/scripted.hpp>
#include <dshpty/service.hpp>
#include <dshpty/shell.hpp>

#include "embed_support.hpp"

namespace {

// A private loop, a scripted backend and a service on it; torn down in that order's reverse.
struct Side {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  std::shared_ptr<dshpty::ScriptedBackend> backend =
      std::make_shared<dshpty::ScriptedBackend>(loop);
  std::optional<dshpty::Service> service{std::in_place, loop};
  dshpty::Owner owner;

  explicit Side(const char* label) {
    REQUIRE(service->register_backend(backend));
    owner = service->mint_owner(label);
  }
  ~Side() {
    if (!service->disposing() || service->has_owner_activity(owner))
      (void)embed::dispose_and_sweep(*service, loop);
    else
      (void)embed::run_until(loop, [&] { return backend->pending() == 0; });
    service.reset();
    backend.reset();
    ev_loop_destroy(loop);
  }

  // Starts a spawn; `out` is set when it completes.
  void spawn(std::optional<dshpty::Result<dshpty::SpawnResult>>& out, const char* name,
             const dshpty::Owner* as = nullptr) {
    service->spawn(as ? *as : owner, {.type = "scripted", .name = name},
                   [&out](dshpty::Result<dshpty::SpawnResult> r) { out.emplace(std::move(r)); });
  }
};

// Runs a loop's pending work without blocking (EVRUN_NOWAIT), a bounded number of turns.
void turn(struct ev_loop* loop, int turns = 8) {
  for (int i = 0; i < turns; ++i) ev_run(loop, EVRUN_NOWAIT);
}

}  // namespace

TEST_CASE("two services on two loops: each completes only from its own loop") {
  Side a("agent-a"), b("agent-b");
  std::optional<dshpty::Result<dshpty::SpawnResult>> on_a, on_b;
  a.spawn(on_a, "main");
  b.spawn(on_b, "main");  // the same name: names are per owner, owners per service

  turn(b.loop);
  CHECK(on_b.has_value());
  CHECK_FALSE(on_a.has_value());  // a's loop has not run yet
  REQUIRE(embed::run_until(a.loop, [&] { return on_a.has_value(); }));

  REQUIRE(on_a->ok());
  REQUIRE(on_b->ok());
  CHECK(a.service->list(a.owner).size() == 1);
  CHECK(b.service->list(b.owner).size() == 1);
  CHECK(a.backend->live_sessions() == 1);
  CHECK(b.backend->live_sessions() == 1);
}

TEST_CASE("two services: owners and session ids do not cross") {
  Side a("agent-a"), b("agent-b");
  std::optional<dshpty::Result<dshpty::SpawnResult>> opened, foreign;
  a.spawn(opened, "main");
  REQUIRE(embed::run_until(a.loop, [&] { return opened.has_value(); }));
  REQUIRE(opened->ok());
  const std::string id = (*opened)->session.id;

  // a's owner is nobody in b, whatever its label.
  CHECK_FALSE(b.service->is_owner_live(a.owner));
  b.spawn(foreign, "main", &a.owner);
  REQUIRE(embed::run_until(b.loop, [&] { return foreign.has_value(); }));
  REQUIRE_FALSE(foreign->ok());
  CHECK(foreign->error()->code == dshpty::Code::OWNER_NOT_LIVE);

  // a's session id means nothing to b (even if b minted the same string, it is b's own).
  auto read = b.service->read(b.owner, id);
  REQUIRE_FALSE(read.ok());
  CHECK(read.error()->code == dshpty::Code::NO_SESSION);
  auto cross = b.service->read(a.owner, id);
  REQUIRE_FALSE(cross.ok());
  CHECK(cross.error()->code == dshpty::Code::OWNER_NOT_LIVE);
}

TEST_CASE("two services: disposing one leaves the other working") {
  Side a("agent-a"), b("agent-b");
  std::optional<dshpty::Result<dshpty::SpawnResult>> on_a, on_b, later;
  a.spawn(on_a, "main");
  b.spawn(on_b, "main");
  REQUIRE(embed::run_until(a.loop, [&] { return on_a.has_value(); }));
  REQUIRE(embed::run_until(b.loop, [&] { return on_b.has_value(); }));
  REQUIRE(on_a->ok());
  REQUIRE(on_b->ok());

  bool a_disposed = false;
  a.service->dispose([&](dshpty::Status s) {
    CHECK(s.ok());
    a_disposed = true;
  });
  turn(b.loop);
  CHECK_FALSE(a_disposed);  // a's disposal waits for a's loop, nothing else
  REQUIRE(embed::run_until(a.loop, [&] { return a_disposed; }));
  CHECK(a.backend->all_processes_gone());
  CHECK(a.backend->live_sessions() == 0);

  // b is untouched: its session is listed and it still spawns.
  CHECK(b.service->list(b.owner).size() == 1);
  CHECK(b.backend->live_sessions() == 1);
  b.spawn(later, "second");
  REQUIRE(embed::run_until(b.loop, [&] { return later.has_value(); }));
  CHECK(later->ok());
  CHECK(b.service->list(b.owner).size() == 2);
}

// The natural host shape for two loops: a thread per loop, each service touched only by its
// own loop's thread (the contract's rule). Nothing in the library may be shared between them.
TEST_CASE("two services: a real shell session on each loop, one thread per loop") {
  struct Outcome {
    std::string marker = embed::fresh_marker("two-loops");
    dshpty::Error error;
    std::optional<int> pid;
    bool listed_while_open = false;
    bool closed = false;
    bool gone_after_close = false;  // no marked process left once the kill completed
    bool disposed = false;
  };
  auto life = [](Outcome& out) {
    struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
    {
      dshpty::Service service(loop);
      (void)service.register_backend(
          dshpty::make_shell_backend(loop, embed::marked_config(out.marker)));
      dshpty::Owner owner = service.mint_owner("agent");
      std::optional<dshpty::Result<dshpty::SpawnResult>> opened;
      service.spawn(owner, {.type = "shell"}, [&](auto r) { opened.emplace(std::move(r)); });
      embed::run_until(loop, [&] { return opened.has_value(); });
      if (opened && opened->ok()) {
        out.pid = (*opened)->session.pid;
        out.listed_while_open = service.list(owner).size() == 1;
        std::optional<dshpty::Result<bool>> killed;
        auto started = service.kill(owner, (*opened)->session.id,
                                    [&](dshpty::Result<bool> r) { killed.emplace(std::move(r)); });
        if (started) embed::run_until(loop, [&] { return killed.has_value(); });
        if (!started) out.error = started.error();
        else if (killed && !killed->ok()) out.error = killed->error();
        else out.closed = killed && **killed;
        out.gone_after_close = embed::marked_processes(out.marker).empty();
      } else if (opened) {
        out.error = opened->error();
      }
      dshpty::Status disposed = embed::dispose_and_sweep(service, loop);
      out.disposed = disposed.ok();
      if (!out.error && !disposed.ok()) out.error = disposed.error();
    }
    ev_loop_destroy(loop);
  };

  Outcome a, b;
  {
    std::thread ta(life, std::ref(a)), tb(life, std::ref(b));
    ta.join();
    tb.join();
  }
  for (Outcome* out : {&a, &b}) {
    // Whatever happened, nothing of either session may outlive the test.
    for (pid_t pid : embed::marked_processes(out->marker)) ::kill(pid, SIGKILL);
    INFO("error: " << (out->error ? dshpty::describe(out->error) : std::string("none")));
    CHECK(!out->error);
    CHECK(out->pid.has_value());
    CHECK(out->listed_while_open);
    CHECK(out->closed);
    CHECK(out->gone_after_close);
    CHECK(out->disposed);
  }
  CHECK(a.pid != b.pid);
}
