// A host compiled against an installed dshpty (`pkg-config --cflags --libs dshpty`), with
// the installed headers only: a scripted session driven through the coroutine adaptor, and
// with --shell a real shell session through the installed supervisor. Exits 0 only when
// every step completed as promised.
#include <ev.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <dshpty/coro.hpp>
#include <dshpty/scripted.hpp>
#include <dshpty/service.hpp>
#include <dshpty/shell.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what, const dshpty::Error& error = {}) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "installed host: %s failed%s%s\n", what, error ? ": " : "",
               error ? dshpty::describe(error).c_str() : "");
}

// Named before the co_await: g++ 12 double-destroys a braced aggregate temporary inside
// a co_await expression (see coro.hpp).
dshpty::coro::Task scripted_session(dshpty::Service& service, dshpty::Owner owner) {
  dshpty::SpawnOptions options{.type = "scripted"};
  auto opened = co_await dshpty::coro::spawn(service, owner, std::move(options));
  check(opened.ok(), "scripted spawn", opened.ok() ? nullptr : opened.error());
  if (!opened) co_return;
  dshpty::SendRequest request{.text = "x"};
  auto sent = co_await dshpty::coro::send(service, owner, opened->session.id, std::move(request));
  check(sent.ok() && sent->viewport == "scripted output\n", "scripted send",
        sent.ok() ? nullptr : sent.error());
  auto killed = co_await dshpty::coro::kill(service, owner, opened->session.id);
  check(killed.ok() && *killed, "scripted kill", killed.ok() ? nullptr : killed.error());
}

dshpty::coro::Task shell_session(dshpty::Service& service, dshpty::Owner owner) {
  dshpty::SpawnOptions options{.type = "shell", .name = "main"};
  auto opened = co_await dshpty::coro::spawn(service, owner, std::move(options));
  check(opened.ok(), "shell spawn", opened.ok() ? nullptr : opened.error());
  if (!opened) co_return;
  check(opened->session.pid.has_value(), "shell pid");
  auto killed = co_await dshpty::coro::kill(service, owner, opened->session.id);
  check(killed.ok() && *killed, "shell kill", killed.ok() ? nullptr : killed.error());
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_shell = argc > 1 && std::strcmp(argv[1], "--shell") == 0;
  struct ev_loop* loop = ev_default_loop(0);
  {
    auto scripted = std::make_shared<dshpty::ScriptedBackend>(loop);
    dshpty::SendResult canned;
    canned.viewport = "scripted output\n";
    scripted->every_session().sends.set_default(
        dshpty::ScriptedSend::with(dshpty::ScriptedStep::succeed(), canned));

    dshpty::Service service(loop);
    check(service.register_backend(scripted).ok(), "register scripted");
    check(service.register_backend(dshpty::make_shell_backend(loop)).ok(), "register shell");
    dshpty::Owner agent = service.mint_owner("installed-host");

    auto first = scripted_session(service, agent);
    dshpty::coro::Task second = with_shell ? shell_session(service, agent) : first;
    while (!first.done() || !second.done()) ev_run(loop, EVRUN_ONCE);

    bool disposed = false;
    service.dispose([&](dshpty::Status s) {
      check(s.ok(), "dispose", s.ok() ? nullptr : s.error());
      disposed = true;
    });
    while (!disposed) ev_run(loop, EVRUN_ONCE);
    check(scripted->all_processes_gone(), "scripted processes gone");
  }
  std::printf("installed host: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
