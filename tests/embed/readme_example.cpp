#include <ev.h>
#include <cstdio>
#include <dshpty/service.hpp>
#include <dshpty/shell.hpp>

int main() {
  struct ev_loop* loop = ev_default_loop(0);  // any loop: ev_loop_new works the same
  dshpty::Service service(loop);
  (void)service.register_backend(dshpty::make_shell_backend(loop));
  dshpty::Owner agent = service.mint_owner("agent-1");
  int status = 1;
  auto finish = [&](const dshpty::Error& error) {
    if (error) std::puts(dshpty::describe(error).c_str());
    service.dispose([](dshpty::Status) {});  // completes once every session's tree is gone
  };
  service.spawn(agent, {.type = "shell", .name = "main"}, [&](auto opened) {
    if (!opened) return finish(opened.error());
    auto sent = service.start_send(agent, opened->session.id, {.text = "cd /tmp && echo $PWD"},
                                   [&](auto result) {
      if (result) {
        std::printf("%s[wait: %s]\n", result->viewport.c_str(),
                    dshpty::wait_reason_name(result->wait_reason).data());
        status = 0;
      }
      finish(result ? dshpty::Error() : result.error());
    });
    if (!sent) finish(sent.error());
  });
  ev_run(loop, 0);  // returns when the service has nothing left to watch
  return status;
}
