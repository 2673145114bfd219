// The local process channel on its own, below any session: its events, the terminal facts
// it answers (foreground group, modes, unread input), and the difference between a tree
// proven gone (quiescent) and a helper that vanished without that proof (lost).
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "local/local_channel.hpp"
#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::shell;
using namespace dshpty::test;

namespace {

struct Recorder final : ChannelEvents {
  std::optional<pid_t> started;
  std::vector<Error> start_failures;
  std::string output;
  int output_ends = 0;
  int write_progress = 0;
  std::optional<SessionStatus> exited;
  int quiescent = 0;
  std::vector<Error> lost;

  void on_started(pid_t pid) override { started = pid; }
  void on_start_failed(Error cause) override { start_failures.push_back(std::move(cause)); }
  void on_output(std::string_view bytes) override { output.append(bytes); }
  void on_output_ended() override { ++output_ends; }
  void on_write_progress() override { ++write_progress; }
  void on_exited(SessionStatus status) override { exited = status; }
  void on_quiescent() override { ++quiescent; }
  void on_lost(Error cause) override { lost.push_back(std::move(cause)); }
};

// The shell's output and the helper's `started` come on two fds, from two processes: the
// shell runs (and may print) before the helper reports it, so neither arrives first for
// sure. A test that needs both waits for both.
bool started_and_ready(const Recorder& events) {
  return events.started && events.output.find("ready") != std::string::npos;
}

LocalLaunch launch_of(const ShellFixture& fx, const std::string& script) {
  std::vector<std::string> env{"PATH=/usr/bin:/bin", "DSHPTY_TEST_MARK=" + fx.marker()};
  std::vector<std::string> argv{"/bin/sh", "-c", script};
  return LocalLaunch{direct_launch(resolve_supervisor_path(""), argv, std::nullopt, env), 24, 80,
                     "/bin/sh", std::nullopt};
}

}  // namespace

TEST_CASE("the local channel answers the terminal's facts and proves the tree gone") {
  ShellFixture fx;
  Recorder events;
  auto launched = LocalChannel::launch(fx.loop(), events,
                                       launch_of(fx, "trap '' TERM; stty -echo; echo ready; exec sleep 60"));
  REQUIRE_MESSAGE(launched, describe(launched.error()));
  auto& channel = **launched;
  CHECK_FALSE(events.started);  // no event inside launch()
  REQUIRE(run_until(fx.loop(), [&] { return started_and_ready(events); }));
  REQUIRE(events.started);
  // The shell leads its own session and group; sleep replaced it, so it holds the terminal.
  CHECK(channel.foreground_group() == *events.started);
  auto modes = channel.terminal_modes();
  REQUIRE(modes);
  CHECK_FALSE(modes->echo);  // `stty -echo` ran in the shell, on the slave side
  CHECK(modes->canonical);
  // An ignored disposition survives exec: sleep ignores TERM, not INT.
  CHECK(channel.ignores_signal(*events.started, SIGTERM));
  CHECK_FALSE(channel.ignores_signal(*events.started, SIGINT));

  // Nobody reads: the line stays in the terminal's input queue (CR becomes NL).
  CHECK(channel.input_unread() == std::size_t{0});
  channel.write("abc\r");
  CHECK(channel.bytes_queued() == 4);
  REQUIRE(run_until(fx.loop(), [&] { return channel.bytes_written() == 4; }));
  CHECK(events.write_progress >= 1);
  // The line discipline takes written bytes from the PTY's buffer on a kernel worker, a
  // moment after write() returned: the count waits for that worker, so it is whole at once.
  CHECK(channel.input_unread() == std::size_t{4});
  // A partial line is not readable input in canonical mode.
  channel.write("def");
  REQUIRE(run_until(fx.loop(), [&] { return channel.bytes_written() == 7; }));
  CHECK(channel.input_unread() == std::size_t{4});

  channel.kill_tree(std::chrono::milliseconds(0));
  REQUIRE(run_until(fx.loop(), [&] { return channel.quiescent() && channel.output_ended(); }));
  CHECK(events.quiescent == 1);
  CHECK(events.lost.empty());
  CHECK(events.output_ends == 1);
  REQUIRE(events.exited);
  CHECK(events.exited->signal.has_value());  // sleep was killed, it did not exit
  CHECK(events.start_failures.empty());
  channel.release();
  CHECK(channel.quiescent());  // the facts outlive the fds
  CHECK_FALSE(channel.input_unread());
  CHECK(channel.foreground_group() == -1);
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a helper that dies without reporting quiescence is lost, never quiescent") {
  ShellFixture fx;
  Recorder events;
  auto launched = LocalChannel::launch(fx.loop(), events, launch_of(fx, "echo ready; exec sleep 60"));
  REQUIRE_MESSAGE(launched, describe(launched.error()));
  auto& channel = **launched;
  REQUIRE(run_until(fx.loop(), [&] { return events.output.find("ready") != std::string::npos; }));
  REQUIRE(::kill(channel.helper_pid(), SIGKILL) == 0);
  REQUIRE(run_until(fx.loop(), [&] { return !events.lost.empty(); }));
  CHECK(events.lost.size() == 1);
  CHECK(events.lost.front()->code == Code::BACKEND_FAILED);
  CHECK(events.lost.front()->message.find("without reporting quiescence") != std::string::npos);
  CHECK(events.quiescent == 0);
  CHECK_FALSE(channel.quiescent());
  // kill_tree has nobody to ask any more: it must neither block nor report anything.
  channel.kill_tree(std::chrono::milliseconds(0));
  channel.release();
  CHECK(events.quiescent == 0);
  // The shell outlived its helper (the fixture kills it): exactly what `lost` warns of.
}

TEST_CASE("the local channel takes back only the last bytes queued, while nobody read them") {
  ShellFixture fx;
  Recorder events;
  // Nobody reads until the test says so (SIGUSR1), then `head` reads one line.
  auto launched = LocalChannel::launch(
      fx.loop(), events,
      launch_of(fx, "stty -echo; trap 'go=1' USR1; echo ready; "
                    "while [ -z \"$go\" ]; do sleep 0.02; done; head -n 1; echo done"));
  REQUIRE_MESSAGE(launched, describe(launched.error()));
  auto& channel = **launched;
  REQUIRE(run_until(fx.loop(), [&] { return started_and_ready(events); }));

  // An earlier line typed ahead, then the cancelled one, taken back at once: the count is
  // whole although the kernel may not have handed the bytes to the line discipline yet.
  channel.write("kept-line\r");
  channel.write("taken-back\r");
  auto taken = channel.take_back_input(11);
  REQUIRE(taken);
  CHECK(*taken == 11);
  // The earlier line was queued again, alone.
  REQUIRE(run_until(fx.loop(), [&] { return channel.input_unread() == std::size_t{10}; }));
  REQUIRE(events.started);
  REQUIRE(::kill(*events.started, SIGUSR1) == 0);
  // The reader gets it, and only it.
  REQUIRE(run_until(fx.loop(), [&] { return events.output.find("done") != std::string::npos; }));
  CHECK(events.output.find("kept-line") != std::string::npos);
  CHECK(events.output.find("taken-back") == std::string::npos);

  channel.kill_tree(std::chrono::milliseconds(0));
  REQUIRE(run_until(fx.loop(), [&] { return channel.quiescent() && channel.output_ended(); }));
  channel.release();
  CHECK(marked_processes(fx.marker()).empty());
}

// Right after a write, the bytes may still be with the kernel's worker: from an empty
// queue the count (and so every "nothing queued, the reader asleep" a send settles on)
// waits for it, every time. A raw terminal, so a byte counts alone; the take-back reads it
// out again, so each round starts from an empty queue.
TEST_CASE("the unread input counts a write at once") {
  ShellFixture fx;
  Recorder events;
  auto launched = LocalChannel::launch(fx.loop(), events,
                                       launch_of(fx, "stty raw -echo; echo ready; exec sleep 60"));
  REQUIRE_MESSAGE(launched, describe(launched.error()));
  auto& channel = **launched;
  REQUIRE(run_until(fx.loop(), [&] { return started_and_ready(events); }));
  for (std::size_t round = 1; round <= 300; ++round) {
    CAPTURE(round);
    channel.write("x");
    REQUIRE(channel.bytes_written() == round);
    REQUIRE(channel.input_unread() == std::size_t{1});
    REQUIRE(channel.take_back_input(1) == std::optional<std::size_t>(1));
  }

  channel.kill_tree(std::chrono::milliseconds(0));
  REQUIRE(run_until(fx.loop(), [&] { return channel.quiescent() && channel.output_ended(); }));
  channel.release();
  CHECK(marked_processes(fx.marker()).empty());
}

// The worst moment for the count: an earlier line already readable (so nothing made the
// count wait for the kernel's worker), the send's line written an instant before. Its
// bytes may still be on their way to the line discipline: counted all the same, and the
// earlier line queued again, every round.
TEST_CASE("a take-back right after its write, behind a readable line, counts all of its bytes") {
  ShellFixture fx;
  Recorder events;
  auto launched = LocalChannel::launch(fx.loop(), events,
                                       launch_of(fx, "stty -echo; echo ready; exec sleep 60"));
  REQUIRE_MESSAGE(launched, describe(launched.error()));
  auto& channel = **launched;
  REQUIRE(run_until(fx.loop(), [&] { return started_and_ready(events); }));
  channel.write("kept-line\r");
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    REQUIRE(run_until(fx.loop(), [&] { return channel.input_unread() == std::size_t{10}; }));
    channel.write("taken-back\r");
    auto taken = channel.take_back_input(11);
    REQUIRE(taken);
    REQUIRE(*taken == 11);
  }
  CHECK(run_until(fx.loop(), [&] { return channel.input_unread() == std::size_t{10}; }));

  channel.kill_tree(std::chrono::milliseconds(0));
  REQUIRE(run_until(fx.loop(), [&] { return channel.quiescent() && channel.output_ended(); }));
  channel.release();
  CHECK(marked_processes(fx.marker()).empty());
}

// A reader asleep in read() holds the line discipline's lock: a non-blocking read of the
// queue then answers EAGAIN without looking (a line editor reads a byte at a time, so it
// is often there). Each byte written is taken back (counted) or read by the reader (it
// echoes it), never dropped uncounted: a flush after such an EAGAIN dropped the line (and
// a cancel then waited for a command start that never came).
TEST_CASE("a take-back while the reader sleeps in read() loses no byte: each is counted or read") {
  ShellFixture fx;
  Recorder events;
  auto launched = LocalChannel::launch(fx.loop(), events,
                                       launch_of(fx, "stty raw -echo; echo ready; exec cat"));
  REQUIRE_MESSAGE(launched, describe(launched.error()));
  auto& channel = **launched;
  REQUIRE(run_until(fx.loop(), [&] { return started_and_ready(events); }));
  int lost_rounds = 0;
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    const char letter = static_cast<char>('a' + round % 26);
    const std::string line(10, letter);
    const std::size_t seen = events.output.size();
    channel.write(line);
    auto taken = channel.take_back_input(line.size());
    REQUIRE(taken);
    // The round ends with a byte written after the take-back: once it is echoed, so is
    // every byte of the line the reader got.
    channel.write("|");
    REQUIRE(run_until(fx.loop(), [&] { return events.output.find('|', seen) != std::string::npos; }));
    const std::string echoed = events.output.substr(seen, events.output.find('|', seen) - seen);
    CHECK(echoed == std::string(line.size() - *taken, letter));
    if (echoed.size() + *taken != line.size()) ++lost_rounds;
  }
  CHECK(lost_rounds == 0);

  channel.kill_tree(std::chrono::milliseconds(0));
  REQUIRE(run_until(fx.loop(), [&] { return channel.quiescent() && channel.output_ended(); }));
  channel.release();
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("the local channel reads only the facts asked for, lingers not, and words its own loss") {
  ShellFixture fx;
  Recorder events;
  auto launched = LocalChannel::launch(fx.loop(), events, launch_of(fx, "cd / && echo ready && exec sleep 60"));
  REQUIRE_MESSAGE(launched, describe(launched.error()));
  auto& channel = **launched;
  REQUIRE(run_until(fx.loop(), [&] { return started_and_ready(events); }));
  // Nothing asked, nothing read: every fact keeps its "unknown".
  CHECK(channel.terminal_facts(0) == TerminalFacts{});
  const TerminalFacts modes = channel.terminal_facts(kFactModes);
  CHECK(modes.foreground == -1);
  CHECK(modes.cwd.empty());
  CHECK(modes.input_unread == -1);
  CHECK((modes.flags & frames::kStateModesKnown) != 0);
  // All of them, in one struct: sleep leads the foreground group, in the shell's cwd.
  const TerminalFacts all = channel.terminal_facts(kFactForeground | kFactModes | kFactInputUnread |
                                                   kFactIgnoredSignals | kFactShellCwd);
  CHECK(all.foreground == *events.started);
  CHECK(all.cwd == "/");
  CHECK(all.input_unread == 0);
  CHECK(channel.shell_cwd() == std::optional<std::string>("/"));

  // A local channel's tree dies with its host: no linger facet.
  CHECK(channel.linger() == nullptr);
  const LossWords words = channel.word_loss(make_error(Code::BACKEND_FAILED, "helper gone"));
  CHECK(words.close_error->message == "helper gone");
  // The status says the tree's end is unconfirmed (an exit told before stays first).
  CHECK(words.status.find("without reporting quiescence") != std::string::npos);
  CHECK(words.start_error->message == "PTY supervisor " + resolve_supervisor_path("") + " exited during start-up");

  channel.kill_tree(std::chrono::milliseconds(0));
  REQUIRE(run_until(fx.loop(), [&] { return channel.quiescent() && channel.output_ended(); }));
  channel.release();
  CHECK(marked_processes(fx.marker()).empty());
}
