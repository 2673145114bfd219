// A host built against dshpty taken as a Meson subproject: one session on the scripted
// backend (no real shell needed), a send, a kill, then the service disposed. Exits 0 only
// when each step completed as promised.
#include <ev.h>

#include <cstdio>
#include <memory>

#include <dshpty/scripted.hpp>
#include <dshpty/service.hpp>

int main() {
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  int failures = 0;
  bool disposed = false;
  {
    auto backend = std::make_shared<dshpty::ScriptedBackend>(loop);
    dshpty::SendResult canned;
    canned.viewport = "hello from the subproject\n";
    canned.wait_reason = dshpty::WaitReason::stdin_read;
    backend->every_session().sends.set_default(
        dshpty::ScriptedSend::with(dshpty::ScriptedStep::succeed(), canned));

    dshpty::Service service(loop);
    if (!service.register_backend(backend)) ++failures;
    dshpty::Owner agent = service.mint_owner("host");
    auto fail = [&](const dshpty::Error& e) {
      std::fprintf(stderr, "host: %s\n", dshpty::describe(e).c_str());
      ++failures;
      service.dispose([&](dshpty::Status) { disposed = true; });
    };
    service.spawn(agent, {.type = "scripted", .name = "main"}, [&](auto opened) {
      if (!opened) return fail(opened.error());
      std::string id = opened->session.id;
      auto sent = service.start_send(agent, id, {.text = "echo hello"}, [&, id](auto result) {
        if (!result) return fail(result.error());
        std::fputs(result->viewport.c_str(), stdout);
        auto killed = service.kill(agent, id, [&](dshpty::Result<bool> closed) {
          if (!closed || !*closed) ++failures;
          service.dispose([&](dshpty::Status s) {
            if (!s) ++failures;
            disposed = true;
          });
        });
        if (!killed) fail(killed.error());
      });
      if (!sent) fail(sent.error());
    });
    ev_run(loop, 0);
    if (!disposed) ++failures;
  }
  ev_loop_destroy(loop);
  std::printf("subproject host: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
