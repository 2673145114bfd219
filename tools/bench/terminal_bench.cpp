// terminal-bench: throughput of the output path (sanitizer -> scrollback + tail buffer +
// prompt watch) and of the screen emulator on typical terminal output, `seq` and `yes`
// (libvterm's own screen layer beside it), and the stdin probe's cost. Not a test: it
// prints numbers. Usage: terminal-bench [MiB, default 64] [screen [rounds]]: `screen` runs the
// screen emulator's streams alone, the best of `rounds` (default 5). Throughput is CPU time
// (the process's), so a machine shared with other work reads the same.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <vterm.h>

#include "local/environment.hpp"
#include "screen/emulator.hpp"
#include "proc/stdin_probe.hpp"
#include "text/output_sink.hpp"
#include "text/prompt_watch.hpp"
#include "text/sanitizer.hpp"
#include "text/scrollback.hpp"
#include "text/tail_buffer.hpp"

using namespace dshpty::text;
using namespace dshpty::proc;
using Clock = std::chrono::steady_clock;

extern char** environ;

namespace {

// What one probe check costs on one program waiting on a fresh PTY (a plain reader, a relay,
// a reader beside a self-pipe): the program is spawned in a group of its own, looked at until
// its wait is seen (a bounded wait), measured, killed and reaped. Nothing when it cannot run.
void probe_cost(const char* label, std::vector<const char*> argv, ProbeVerdict expected) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return;
  int slave = ::unlockpt(master) == 0 ? ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
  dev_t device = 0;
  if (slave >= 0) {
    if (auto dev = terminal_device(slave); dev.ok()) device = *dev;
  }
  pid_t pid = -1;
  if (device != 0) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    for (int fd = 0; fd < 3; ++fd) posix_spawn_file_actions_adddup2(&actions, slave, fd);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    argv.push_back(nullptr);
    if (::posix_spawnp(&pid, argv[0], &actions, &attr, const_cast<char* const*>(argv.data()), environ) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  if (pid > 0) {
    StdinProbe probe(device, ::getpid());  // the tree walk, as a session's probe walks from its helper
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (probe.check(pid) != expected && Clock::now() < deadline) ::usleep(2000);
    if (probe.check(pid) == expected) {
      const int rounds = 500;
      const auto start = Clock::now();
      for (int i = 0; i < rounds; ++i) (void)probe.check(pid);
      std::printf("stdin probe on %s: check %.1f us\n", label,
                  std::chrono::duration<double, std::micro>(Clock::now() - start).count() / rounds);
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  if (slave >= 0) ::close(slave);
  ::close(master);
}

// A session's marks around its prompt (text/sanitizer.hpp), with its nonce.
constexpr const char* kNonce = "0123456789abcdef";
constexpr std::string_view kMarks =
    "\x1B]133;P;cwd=/home/user/project;dshpty=0123456789abcdef\x07\x1B]133;D;0;dshpty=0123456789abcdef\x07"
    "\x1B]133;A;dshpty=0123456789abcdef\x07";

// About 1 MiB of what a shell shows: plain lines, colour (ls, grep, compilers), UTF-8,
// progress lines with lone CRs, a title OSC and a prompt marker now and then; CR LF ends.
std::string typical_block() {
  std::string block;
  int n = 0;
  while (block.size() < (1u << 20)) {
    ++n;
    switch (n % 10) {
      case 0: block += "\x1B[0m\x1B[01;34mdirectory\x1B[0m  \x1B[01;32mscript.sh\x1B[0m  notes.txt  \x1B[01;31marchive.tar.gz\x1B[0m\r\n"; break;
      case 1: block += "src/sanitizer.cpp:" + std::to_string(n) + ":17: \x1B[01;35mwarning: \x1B[0munused variable \xE2\x80\x98x\xE2\x80\x99 [-Wunused-variable]\r\n"; break;
      case 2: block += "r\xC3\xA9sum\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 na\xC3\xAFve caf\xC3\xA9 \xE2\x82\xAC" "42\r\n"; break;
      case 3: block += "progress  " + std::to_string(n % 100) + "%\rprogress " + std::to_string(n % 100 + 1) + "%\r\n"; break;
      case 4: block += "\x1B]0;user@host: ~/project\x07" + std::string(kMarks) + std::string(dshpty::shell::kPrompt) + "\x1B]133;B;dshpty=" + kNonce + "\x07"; break;
      default: block += "-rw-r--r-- 1 user user   " + std::to_string(n * 37 % 100000) + " Dec  2 14:52 file_" + std::to_string(n) + ".txt\r\n"; break;
    }
  }
  return block;
}

struct Result {
  double seconds;
  std::size_t bytes;
};

double cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

template <class F>
Result run(const std::string& block, std::size_t total, std::size_t chunk, F&& per_chunk) {
  std::size_t done = 0;
  const double start = cpu_seconds();
  while (done < total) {
    for (std::size_t off = 0; off < block.size() && done < total; off += chunk) {
      std::string_view piece = std::string_view(block).substr(off, chunk);
      per_chunk(piece);
      done += piece.size();
    }
  }
  return {cpu_seconds() - start, done};
}

void report(const char* what, Result r) {
  std::printf("%-46s %8.1f MB/s  (%zu MiB in %.3f s)\n", what, r.bytes / r.seconds / 1e6, r.bytes >> 20, r.seconds);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
  const bool screen_only = argc > 2 && std::strcmp(argv[2], "screen") == 0;
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : screen_only ? 5 : 1;
  const std::size_t total = mib << 20;
  const std::size_t chunk = 4096;  // what a PTY master read returns
  const std::string block = typical_block();
  std::string yes_block;
  while (yes_block.size() < (1u << 20)) yes_block += "y\r\n";

  for (int variant = 0; variant < 2 && !screen_only; ++variant) {
    Sanitizer sanitizer;
    SanitizedText out;
    std::size_t text = 0;
    report(variant == 0 ? "sanitizer, typical output" : "sanitizer, `yes`",
           run(variant == 0 ? block : yes_block, total, chunk, [&](std::string_view piece) {
             out.clear();
             sanitizer.feed(piece, out);
             text += out.text.size();
           }));
    if (text == 0) return 1;
  }
  for (int variant = 0; variant < 2 && !screen_only; ++variant) {
    const std::string& input = variant == 0 ? block : yes_block;
    // The session's own pipeline: sanitizer, line editor, then scrollback and a send's tail
    // and prompt watch as sinks.
    struct SendSink final : OutputSink {
      TailBuffer tail{256u << 10};
      PromptWatch watch;
      void on_sanitized(const SanitizedText& chunk) override { watch.observe(chunk); }
      void on_text(const SanitizedText& chunk) override { tail.append(chunk.text); }
      void on_line_rewrite(std::string_view line, std::size_t changed_from) override {
        tail.rewrite_line(line, changed_from);
      }
    } send;
    OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, kNonce});
    Scrollback scrollback;
    pipeline.add(scrollback);
    pipeline.add(send);
    report(variant == 0 ? "pipeline (+line editor, scrollback, tail, prompt), typical"
                        : "pipeline (+line editor, scrollback, tail, prompt), `yes`",
           run(input, total, chunk, [&](std::string_view piece) { pipeline.feed(piece); }));
    std::printf("  retained %zu bytes, %lld lines, %zu bytes of storage\n", scrollback.retained_bytes(),
                static_cast<long long>(scrollback.total_lines()), scrollback.memory_bytes());
  }

  // The screen emulator on a 50x160 terminal, as a session feeds it: each read's bytes.
  std::string seq_block;
  for (int i = 1; seq_block.size() < (1u << 20); ++i) seq_block += std::to_string(i) + "\r\n";
  std::string flood_block;  // dshpty-bench's figure 1 flood: 70-character lines
  while (flood_block.size() < (1u << 20)) flood_block += "the quick brown fox jumps over the lazy dog 0123456789 abcdefghijkl\r\n";
  const struct {
    const char* name;
    const std::string& input;
  } streams[] = {{"typical", block}, {"`seq`", seq_block}, {"`yes`", yes_block}, {"figure 1 flood", flood_block}};
  for (const auto& stream : streams) {
    Result best{1e300, 0};
    for (int round = 0; round < rounds; ++round) {
      dshpty::screen::Emulator emulator(50, 160, [](std::string_view) {});
      Result r = run(stream.input, total, chunk, [&](std::string_view piece) { emulator.on_bytes(piece); });
      if (r.seconds < best.seconds) best = r;
      if (emulator.snapshot().lines.empty()) return 1;
    }
    std::string label = std::string("screen emulator 50x160, ") + stream.name;
    report(label.c_str(), best);
  }
  if (screen_only) return 0;
  {
    // What a session's screen costs at its prompt (the default 40x160 terminal).
    dshpty::screen::Emulator idle(40, 160, [](std::string_view) {});
    idle.on_bytes(std::string("\x1B]133;D;0\x07") + std::string(dshpty::shell::kPrompt));
    std::printf("screen emulator 40x160 at a prompt: %zu bytes (grid and libvterm's state)\n", idle.memory_bytes());
  }
  {
    // libvterm's own screen layer (what the emulator does not use), on `seq`: the reference
    // screen.md measured at 1.7 MiB/s. A smaller total: it is that slow.
    VTerm* vt = vterm_new(50, 160);
    vterm_set_utf8(vt, 1);
    VTermScreen* screen = vterm_obtain_screen(vt);
    vterm_screen_reset(screen, 1);
    report("libvterm screen layer 50x160, `seq` (reference)",
           run(seq_block, std::min<std::size_t>(total, 8u << 20), chunk,
               [&](std::string_view piece) { vterm_input_write(vt, piece.data(), piece.size()); }));
    vterm_free(vt);
  }

  if (StdinProbe::supported()) {
    StdinProbe probe(0);
    const pid_t group = ::getpgrp();
    const int rounds = 200;
    auto start = Clock::now();
    std::size_t members = 0;
    for (int i = 0; i < rounds; ++i) members += processes_in_group(group).size();
    double scan = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / rounds;
    start = Clock::now();
    for (int i = 0; i < rounds; ++i) (void)probe.check(group);
    double check = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / rounds;
    std::size_t all = 0;
    if (DIR* dir = ::opendir("/proc")) {
      while (const dirent* entry = ::readdir(dir)) all += entry->d_name[0] >= '1' && entry->d_name[0] <= '9';
      ::closedir(dir);
    }
    std::printf("stdin probe: group scan %.0f us, check %.0f us (%zu processes on the machine, %zu in the group)\n",
                scan, check, all, members / rounds);
    // The same through the tree walk from this process (as a session walks from its
    // helper): O(tree), whatever else runs on the machine.
    StdinProbe walker(0, ::getpid());
    start = Clock::now();
    members = 0;
    for (int i = 0; i < rounds; ++i) members += processes_in_group(group, ::getpid()).size();
    double walk = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / rounds;
    start = Clock::now();
    for (int i = 0; i < rounds; ++i) walker.baseline(group);
    double baseline = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / rounds;
    start = Clock::now();
    for (int i = 0; i < rounds; ++i) (void)walker.check(group);
    check = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / rounds;
    std::printf("stdin probe, tree walk from this process: group %.1f us, baseline %.1f us, check %.1f us "
                "(%zu in the group)\n",
                walk, baseline, check, members / rounds);
    // A relay costs its other fds' looks (docs/shell-backend.md, "Relays are not readers").
    probe_cost("cat (a plain read)", {"cat"}, ProbeVerdict::blocked_reading);
    probe_cost("a python select on the terminal and a PTY master (a relay)",
               {"python3", "-c", "import os,select; m,s=os.openpty(); select.select([0,m],[],[])"},
               ProbeVerdict::relaying);
    probe_cost("a python epoll on the terminal and its own socketpair (asyncio's self-pipe)",
               {"python3", "-c",
                "import select,socket; a,b=socket.socketpair(); e=select.epoll(); e.register(0,select.EPOLLIN); "
                "e.register(a,select.EPOLLIN); e.poll()"},
               ProbeVerdict::blocked_reading);
  }
  return 0;
}
