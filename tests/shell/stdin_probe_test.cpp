// The stdin probe against real processes on a real PTY: a reader, a sleeper, pollers.
// Every wait is bounded polling of /proc until a state appears (a child needs a moment
// to enter its system call); every child is killed and reaped by its fixture.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "dshpty/errors.hpp"
#include "proc/process_tree.hpp"
#include "proc/relayed_input.hpp"
#include "proc/stdin_probe.hpp"

extern char** environ;

using dshpty::proc::children_files_supported;
using dshpty::proc::processes_in_group;
using dshpty::proc::ProbeEvidence;
using dshpty::proc::ProbeVerdict;
using dshpty::proc::StdinProbe;
using dshpty::proc::terminal_device;

namespace {

struct Pty {
  int master = -1;
  int slave = -1;
  dev_t device = 0;
  Pty() {
    master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    REQUIRE(master >= 0);
    REQUIRE(::unlockpt(master) == 0);
    slave = ::ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    REQUIRE(slave >= 0);
    auto dev = terminal_device(slave);
    REQUIRE(dev.ok());
    device = *dev;
  }
  ~Pty() {
    if (slave >= 0) ::close(slave);
    if (master >= 0) ::close(master);
  }
  Pty(const Pty&) = delete;
  Pty& operator=(const Pty&) = delete;
};

struct Pipe {
  int read_end = -1, write_end = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read_end = fds[0];
    write_end = fds[1];
  }
  ~Pipe() {
    ::close(read_end);
    ::close(write_end);
  }
};

// A child on `in` (stdin) and `out` (stdout and stderr), in its own process group or in
// `join_group`'s; killed and reaped when the fixture goes, pass or fail.
struct Child {
  pid_t pid = -1;
  Child(std::vector<std::string> argv, int in, int out, pid_t join_group = 0, bool new_group = true) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_adddup2(&actions, in, 0);
    posix_spawn_file_actions_adddup2(&actions, out, 1);
    posix_spawn_file_actions_adddup2(&actions, out, 2);
    if (new_group) {
      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
      posix_spawnattr_setpgroup(&attr, join_group);
    }
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    REQUIRE(rc == 0);
  }
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
};

bool eventually(const std::function<bool()>& condition, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    ::poll(nullptr, 0, 2);  // the polling interval, not a guess at how long the child needs
  }
  return condition();
}

// Some thread of pid sleeps in one of these syscalls (the child has settled).
bool in_syscall(pid_t pid, const std::vector<long>& numbers) {
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "syscall");
    long nr = -1;
    if (in >> nr)
      for (long n : numbers)
        if (n == nr) return true;
  }
  return false;
}

std::string python() {
  for (const char* path : {"/usr/bin/python3", "/usr/local/bin/python3"})
    if (::access(path, X_OK) == 0) return path;
  return {};
}

std::vector<long> poll_calls() {
  return {
#ifdef __NR_poll
      __NR_poll,
#endif
      __NR_ppoll};
}

ProbeVerdict verdict(const StdinProbe& probe, pid_t pgid, ProbeEvidence* evidence = nullptr) {
  return probe.check(pgid, evidence);
}

}  // namespace

TEST_CASE("the probe is supported here, or says unsupported") {
  Pty pty;
  StdinProbe probe(pty.device);
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
  CHECK(StdinProbe::supported());
#else
  CHECK(probe.check(::getpgrp()) == ProbeVerdict::unsupported);
#endif
}

TEST_CASE("terminal_device: a PTY slave has one; a pipe is not a terminal") {
  Pty pty;
  struct stat st {};
  REQUIRE(::fstat(pty.slave, &st) == 0);
  CHECK(pty.device == st.st_rdev);
  Pipe pipe;
  auto dev = terminal_device(pipe.read_end);
  REQUIRE_FALSE(dev.ok());
  CHECK(dev.error()->code == dshpty::Code::INVALID_ARGUMENT);
}

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))

TEST_CASE("a child blocked in read(0) on the PTY is blocked reading") {
  Pty pty;
  Child cat({"cat"}, pty.slave, pty.slave);
  StdinProbe probe(pty.device);
  ProbeEvidence evidence;
  REQUIRE(eventually([&] { return verdict(probe, cat.pid, &evidence) == ProbeVerdict::blocked_reading; }));
  CHECK(evidence.pid == cat.pid);
  CHECK(evidence.tid == cat.pid);
  CHECK(evidence.fd == 0);
  CHECK(evidence.syscall == __NR_read);
}

TEST_CASE("baseline: a reader that has not run since proves nothing; after new input it does") {
  Pty pty;
  Child cat({"cat"}, pty.slave, pty.slave);
  StdinProbe probe(pty.device);
  REQUIRE(eventually([&] { return verdict(probe, cat.pid) == ProbeVerdict::blocked_reading; }));
  probe.baseline(cat.pid);  // as before a send's write: cat sits in read(0)
  CHECK(verdict(probe, cat.pid) == ProbeVerdict::not_proven);
  REQUIRE(::write(pty.master, "x\n", 2) == 2);
  // cat wakes, copies the line, and sleeps in read(0) again: fresh evidence.
  CHECK(eventually([&] { return verdict(probe, cat.pid) == ProbeVerdict::blocked_reading; }));
  probe.clear_baseline();
  CHECK(verdict(probe, cat.pid) == ProbeVerdict::blocked_reading);
}

TEST_CASE("a child in sleep is not reading") {
  Pty pty;
  Child sleeper({"sleep", "60"}, pty.slave, pty.slave);
  REQUIRE(eventually([&] { return in_syscall(sleeper.pid, {__NR_clock_nanosleep, __NR_nanosleep}); }));
  StdinProbe probe(pty.device);
  CHECK(verdict(probe, sleeper.pid) == ProbeVerdict::not_proven);
}

TEST_CASE("read(0) counts only when fd 0 is this terminal") {
  Pty unused;  // kept open, so its device number is not reused by the PTYs below
  StdinProbe probe(unused.device);
  {
    Pipe pipe;
    Pty pty;
    Child cat({"cat"}, pipe.read_end, pty.slave);
    REQUIRE(eventually([&] { return in_syscall(cat.pid, {__NR_read}); }));
    CHECK(verdict(probe, cat.pid) == ProbeVerdict::not_proven);
    StdinProbe right(pty.device);
    CHECK(verdict(right, cat.pid) == ProbeVerdict::not_proven);  // its stdout is, stdin is not
  }
  {
    Pty other;
    Child cat({"cat"}, other.slave, other.slave);
    REQUIRE(eventually([&] { return in_syscall(cat.pid, {__NR_read}); }));
    CHECK(verdict(probe, cat.pid) == ProbeVerdict::not_proven);  // a terminal, not ours
    StdinProbe right(other.device);
    CHECK(verdict(right, cat.pid) == ProbeVerdict::blocked_reading);
  }
}

TEST_CASE("only the given process group counts") {
  Pty pty;
  Child cat({"cat"}, pty.slave, pty.slave);
  Child sleeper({"sleep", "60"}, pty.slave, pty.slave);
  StdinProbe probe(pty.device);
  REQUIRE(eventually([&] { return verdict(probe, cat.pid) == ProbeVerdict::blocked_reading; }));
  CHECK(verdict(probe, sleeper.pid) == ProbeVerdict::not_proven);
  CHECK(verdict(probe, 0) == ProbeVerdict::not_proven);
  CHECK(verdict(probe, -1) == ProbeVerdict::not_proven);
}

TEST_CASE("a reader that is not the group leader is found by the /proc scan") {
  Pty pty;
  Child leader({"sleep", "60"}, pty.slave, pty.slave);
  Child cat({"cat"}, pty.slave, pty.slave, leader.pid);
  REQUIRE(eventually([&] { return processes_in_group(leader.pid).size() == 2; }));
  std::vector<pid_t> members = processes_in_group(leader.pid);
  CHECK(members == std::vector<pid_t>{leader.pid, cat.pid});  // leader first
  StdinProbe probe(pty.device);
  ProbeEvidence evidence;
  REQUIRE(eventually([&] { return verdict(probe, leader.pid, &evidence) == ProbeVerdict::blocked_reading; }));
  CHECK(evidence.pid == cat.pid);
}

TEST_CASE("select, poll and epoll on stdin are blocked reading") {
  const std::string py = python();
  if (py.empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  const char* programs[] = {
      "import select,sys; select.select([sys.stdin],[],[])",
      "import select; p=select.poll(); p.register(0, select.POLLIN); p.poll()",
      "import select; e=select.epoll(); e.register(0, select.EPOLLIN); e.poll()",
      "import select,os; r,w=os.pipe(); select.select([r, 0],[],[])",  // 0 among others
  };
  for (const char* program : programs) {
    INFO(program);
    Pty pty;
    Child child({py, "-c", program}, pty.slave, pty.slave);
    StdinProbe probe(pty.device);
    CHECK(eventually([&] { return verdict(probe, child.pid) == ProbeVerdict::blocked_reading; }));
  }
}

TEST_CASE("polling other fds, or stdin only for writing, is not reading the terminal") {
  const std::string py = python();
  if (py.empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  struct Case {
    const char* program;
    std::vector<long> syscalls;
  };
  std::vector<long> selects = {__NR_pselect6};
#ifdef __NR_select
  selects.push_back(__NR_select);
#endif
  std::vector<long> epolls = {__NR_epoll_pwait};
#ifdef __NR_epoll_wait
  epolls.push_back(__NR_epoll_wait);
#endif
  const Case cases[] = {
      {"import select,os; r,w=os.pipe(); select.select([r],[],[])", selects},
      {"import select,os; r,w=os.pipe(); select.select([],[],[0])", selects},  // except-set only
      {"import select,os; r,w=os.pipe(); p=select.poll(); p.register(r, select.POLLIN); p.poll()", poll_calls()},
      {"import select,os; r,w=os.pipe(); e=select.epoll(); e.register(r, select.EPOLLIN); e.poll()", epolls},
  };
  for (const Case& c : cases) {
    INFO(c.program);
    Pty pty;
    Child child({py, "-c", c.program}, pty.slave, pty.slave);
    REQUIRE(eventually([&] { return in_syscall(child.pid, c.syscalls); }));
    StdinProbe probe(pty.device);
    CHECK(verdict(probe, child.pid) == ProbeVerdict::not_proven);
  }
}

TEST_CASE("a thread other than the main one reading stdin is found") {
  const std::string py = python();
  if (py.empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  Pty pty;
  Child child({py, "-c", "import threading,sys; t=threading.Thread(target=lambda: sys.stdin.buffer.raw.read(1)); t.start(); t.join()"},
              pty.slave, pty.slave);
  StdinProbe probe(pty.device);
  ProbeEvidence evidence;
  REQUIRE(eventually([&] { return verdict(probe, child.pid, &evidence) == ProbeVerdict::blocked_reading; }));
  CHECK(evidence.pid == child.pid);
  CHECK(evidence.tid != child.pid);
}

TEST_CASE("reading /dev/tty counts when the terminal is the process's controlling terminal") {
  if (::access("/usr/bin/setsid", X_OK) != 0) {
    MESSAGE("no setsid(1): skipped");
    return;
  }
  Pty pty;
  // setsid -c: a new session whose controlling terminal is stdin (our slave); not a group
  // leader when spawned, so setsid(1) execs cat in place (no grandchild).
  Child child({"/usr/bin/setsid", "-c", "cat", "/dev/tty"}, pty.slave, pty.slave, 0, false);
  StdinProbe probe(pty.device);
  ProbeEvidence evidence;
  REQUIRE(eventually([&] { return verdict(probe, child.pid, &evidence) == ProbeVerdict::blocked_reading; }));
  CHECK(evidence.fd != 0);  // cat reads the file it opened, /dev/tty
}

// The tree walk (a root every session process descends from, as the supervisor helper is
// for a session; here the test process is the root of its children).

TEST_CASE("a reader that is a grandchild of the tree root is found by the tree walk") {
  Pty pty;
  // sh forks cat (`; :` keeps it from exec'ing cat in place): cat is this process's
  // grandchild, in sh's group, and not its leader.
  Child sh({"sh", "-c", "cat; :"}, pty.slave, pty.slave);
  StdinProbe probe(pty.device, ::getpid());
  CHECK(probe.tree_root() == ::getpid());
  ProbeEvidence evidence;
  REQUIRE(eventually([&] { return verdict(probe, sh.pid, &evidence) == ProbeVerdict::blocked_reading; }));
  CHECK(evidence.pid != sh.pid);
  CHECK(evidence.fd == 0);
  std::vector<pid_t> members = processes_in_group(sh.pid, ::getpid());
  CHECK(members == std::vector<pid_t>{sh.pid, evidence.pid});  // a parent before its child
  // The baseline sees it through the same walk: cat, untouched since, proves nothing.
  probe.baseline(sh.pid);
  CHECK(verdict(probe, sh.pid) == ProbeVerdict::not_proven);
  REQUIRE(::write(pty.master, "x\n", 2) == 2);
  CHECK(eventually([&] { return verdict(probe, sh.pid) == ProbeVerdict::blocked_reading; }));
}

TEST_CASE("a root outside the session: the baseline walks its tree without its status") {
  Pty pty;
  // As a session is for its helper: the reader is a grandchild of the root (this test
  // process: single-threaded, and never in sh's group, which Child makes its own).
  Child sh({"sh", "-c", "cat; :"}, pty.slave, pty.slave);
  StdinProbe probe(pty.device);
  probe.set_tree_root(::getpid(), StdinProbe::Root::outside_session);
  REQUIRE(eventually([&] { return verdict(probe, sh.pid) == ProbeVerdict::blocked_reading; }));
  probe.baseline(sh.pid);  // cat sits in read(0): untouched since, it proves nothing
  CHECK(verdict(probe, sh.pid) == ProbeVerdict::not_proven);
  REQUIRE(::write(pty.master, "x\n", 2) == 2);
  CHECK(eventually([&] { return verdict(probe, sh.pid) == ProbeVerdict::blocked_reading; }));
}

TEST_CASE("the tree walk does not see a reader outside the root's tree") {
  if (!children_files_supported()) {
    MESSAGE("no /proc children files: every probe falls back to the /proc scan; skipped");
    return;
  }
  Pty pty;
  Child cat({"cat"}, pty.slave, pty.slave);
  Child other_root({"sleep", "60"}, pty.slave, pty.slave);  // cat is not its descendant
  // Positive controls first, so the negative below is not vacuous: the scan and a walk
  // from this process both prove cat blocked reading.
  StdinProbe scan(pty.device);
  REQUIRE(eventually([&] { return verdict(scan, cat.pid) == ProbeVerdict::blocked_reading; }));
  StdinProbe mine(pty.device, ::getpid());
  CHECK(verdict(mine, cat.pid) == ProbeVerdict::blocked_reading);

  StdinProbe outside(pty.device, other_root.pid);
  CHECK(verdict(outside, cat.pid) == ProbeVerdict::not_proven);
  CHECK(processes_in_group(cat.pid, other_root.pid).empty());
  CHECK(processes_in_group(cat.pid, ::getpid()) == std::vector<pid_t>{cat.pid});
  // The root itself is walked: a root in the group is a member.
  CHECK(processes_in_group(other_root.pid, other_root.pid) == std::vector<pid_t>{other_root.pid});
  // A root that is gone walks nothing (and is not mistaken for "no children files").
  StdinProbe gone(pty.device, 0x7FFFFFF0);
  CHECK(verdict(gone, cat.pid) == ProbeVerdict::not_proven);
}

// Relays: a process asleep on the terminal together with another input it relays (ssh's
// socket, script's PTY master, apt's dpkg PTY), or with a short timeout, is no reader.

namespace {

// A python program that waits as `wait` says after `setup`; a helper it forks (holding the
// far end of a pipe or socket) exits when the program dies, so killing the Child is enough.
std::string relay_program(const std::string& setup, const std::string& wait) {
  return "import os,select,socket,sys,threading\n"
         "dr,dw=os.pipe()\n" + setup +
         "os.close(dr)\n" + wait + "\n";
}

// A helper that keeps `far` (a pipe's write end, a socket) open until the program dies:
// forked, it closes what is not its own and waits for the death pipe's end of file.
std::string fork_holder(const std::string& near, const std::string& far) {
  return "if os.fork()==0:\n"
         "    os.close(dw); os.close(" + near + "); os.read(dr,1); os._exit(0)\n"
         "os.close(" + far + ")\n";
}

ProbeVerdict settled_verdict(const StdinProbe& probe, pid_t pid, ProbeEvidence* evidence = nullptr) {
  ProbeVerdict v = ProbeVerdict::not_proven;
  eventually([&] {
    v = verdict(probe, pid, evidence);
    return v != ProbeVerdict::not_proven;
  });
  return v;
}

}  // namespace

TEST_CASE("a wait on the terminal and a relayed input is a relay, never a reader") {
  const std::string py = python();
  if (py.empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  struct Case {
    const char* name;
    std::string program;
  };
  const Case cases[] = {
      {"select on a PTY master (script, apt)", relay_program("m,s=os.openpty()\n", "select.select([0,m],[],[])")},
      {"poll on a PTY master", relay_program("m,s=os.openpty()\n",
                                             "p=select.poll(); p.register(0,select.POLLIN); p.register(m,select.POLLIN); p.poll()")},
      {"epoll on a PTY master", relay_program("m,s=os.openpty()\n",
                                              "e=select.epoll(); e.register(0,select.EPOLLIN); e.register(m,select.EPOLLIN); e.poll()")},
      {"a pipe another process writes", relay_program("r,w=os.pipe()\n" + fork_holder("r", "w"), "select.select([0,r],[],[])")},
      {"a UNIX socket another process holds the peer of (ssh's agent, docker's socket)",
       relay_program("a,b=[x.detach() for x in socket.socketpair()]\n" + fork_holder("a", "b"),
                     "select.select([0,a],[],[])")},
      {"a TCP connection (ssh)",
       relay_program("l=socket.socket(); l.bind(('127.0.0.1',0)); l.listen(); c=socket.create_connection(l.getsockname()); x,_=l.accept()\n",
                     "select.select([c,0],[],[])")},
      {"a short timeout on the terminal alone (a loop that checks for a key between steps)",
       relay_program("", "while True: select.select([sys.stdin],[],[],0.5)")},
      {"another thread waits on the relayed input while one reads the terminal (Go's docker, kubectl)",
       relay_program("m,s=os.openpty()\n",
                     "threading.Thread(target=lambda: select.select([m],[],[]), daemon=True).start(); os.read(0,1)")},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Pty pty;
    Child child({py, "-c", c.program}, pty.slave, pty.slave);
    StdinProbe probe(pty.device);
    ProbeEvidence evidence;
    CHECK(settled_verdict(probe, child.pid, &evidence) == ProbeVerdict::relaying);
    CHECK(evidence.pid == child.pid);
    CHECK((evidence.relayed_fd >= 0 || evidence.timed));
  }
}

namespace {
// The bytes `pid` has written so far (wchar in /proc/<pid>/io), or 0.
unsigned long long written_by(pid_t pid) {
  std::ifstream io("/proc/" + std::to_string(pid) + "/io");
  for (std::string line; std::getline(io, line);)
    if (line.rfind("wchar:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}
}  // namespace

TEST_CASE("a short poll of the terminal alone is a reader once it woke and wrote nothing; one that prints stays a relay") {
  const std::string py = python();
  if (py.empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  {
    // ipython's prompt, an idle key loop: first seen it is a relay (it may act on waking),
    // then, seen again after more than its timeout with nothing written, a reader.
    Pty pty;
    Child child({py, "-c", relay_program("", "while True: select.select([sys.stdin],[],[],0.3)")}, pty.slave, pty.slave);
    StdinProbe probe(pty.device);
    ProbeEvidence evidence;
    CHECK(settled_verdict(probe, child.pid, &evidence) == ProbeVerdict::relaying);
    REQUIRE(eventually([&] { return verdict(probe, child.pid, &evidence) == ProbeVerdict::blocked_reading; }));
    CHECK(evidence.timed);
    CHECK(evidence.relayed_fd == -1);
    // A new baseline (the next send's write) forgets the sightings: a relay again at first.
    probe.baseline(child.pid);
    CHECK(settled_verdict(probe, child.pid) == ProbeVerdict::relaying);
  }
  {
    // A dot printed on every wake: a relay however often it is looked at, here over five wakes.
    Pty pty;
    Child child({py, "-c", relay_program("", "while True:\n    select.select([sys.stdin],[],[],0.3)\n    os.write(1, b'.')")},
                pty.slave, pty.slave);
    StdinProbe probe(pty.device);
    CHECK(settled_verdict(probe, child.pid) == ProbeVerdict::relaying);
    const unsigned long long start = written_by(child.pid);
    bool reader_seen = false;
    REQUIRE(eventually([&] {
      reader_seen = reader_seen || verdict(probe, child.pid) == ProbeVerdict::blocked_reading;
      return written_by(child.pid) >= start + 5;
    }));
    CHECK_FALSE(reader_seen);
  }
}

TEST_CASE("beside the terminal, a self-pipe, a socketpair of its own or a long timeout leaves a reader") {
  const std::string py = python();
  if (py.empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  const std::string programs[] = {
      // libuv's and Go's wake-up pipe: both ends held.
      relay_program("r,w=os.pipe()\n", "select.select([0,r],[],[])"),
      // asyncio's self-pipe (ipython, prompt_toolkit): a socketpair, both ends held.
      relay_program("a,b=socket.socketpair()\n", "e=select.epoll(); e.register(0,select.EPOLLIN); e.register(a,select.EPOLLIN); e.poll()"),
      // fish's notifier: a FIFO opened read-write.
      relay_program("import tempfile\nd=tempfile.mkdtemp(); f=d+'/n'; os.mkfifo(f); n=os.open(f, os.O_RDWR); os.unlink(f); os.rmdir(d)\n",
                    "select.select([0,n],[],[])"),
      // An eventfd (libuv's, Go's wake-up) is no far side.
      relay_program("ev=os.eventfd(0)\n", "select.select([0,ev],[],[])"),
      // A long timeout (top's 3 s refresh, vim's 4 s CursorHold) is a program at rest.
      relay_program("", "select.select([sys.stdin],[],[],30)"),
      // A thread reads the terminal; the others only join or sleep.
      relay_program("", "t=threading.Thread(target=lambda: os.read(0,1)); t.start(); t.join()"),
  };
  for (const std::string& program : programs) {
    INFO(program);
    Pty pty;
    Child child({py, "-c", program}, pty.slave, pty.slave);
    StdinProbe probe(pty.device);
    ProbeEvidence evidence;
    CHECK(settled_verdict(probe, child.pid, &evidence) == ProbeVerdict::blocked_reading);
    CHECK(evidence.relayed_fd == -1);
    CHECK_FALSE(evidence.timed);
  }
}

TEST_CASE("real relays: script(1) relays the terminal; bash at its prompt stays a reader") {
  if (::access("/usr/bin/script", X_OK) == 0) {
    Pty pty;
    Child script({"/usr/bin/script", "-q", "-c", "sleep 60", "/dev/null"}, pty.slave, pty.slave);
    StdinProbe probe(pty.device);
    ProbeEvidence evidence;
    CHECK(settled_verdict(probe, script.pid, &evidence) == ProbeVerdict::relaying);
    CHECK(evidence.relayed_fd >= 0);
  } else {
    MESSAGE("no script(1): that part skipped");
  }
  // readline sleeps in pselect6 on the terminal alone, without a timeout.
  Pty pty;
  Child bash({"bash", "--norc", "--noprofile", "-i"}, pty.slave, pty.slave);
  StdinProbe probe(pty.device);
  ProbeEvidence evidence;
  CHECK(settled_verdict(probe, bash.pid, &evidence) == ProbeVerdict::blocked_reading);
  CHECK(evidence.relayed_fd == -1);
}

TEST_CASE("a relay and a plain reader in one group: the reader proves it") {
  const std::string py = python();
  if (py.empty()) {
    MESSAGE("no python3: skipped");
    return;
  }
  Pty pty;
  Child relay({py, "-c", relay_program("m,s=os.openpty()\n", "select.select([0,m],[],[])")}, pty.slave, pty.slave);
  StdinProbe probe(pty.device);
  REQUIRE(settled_verdict(probe, relay.pid) == ProbeVerdict::relaying);
  Child cat({"cat"}, pty.slave, pty.slave, relay.pid);
  ProbeEvidence evidence;
  CHECK(eventually([&] { return verdict(probe, relay.pid, &evidence) == ProbeVerdict::blocked_reading; }));
  CHECK(evidence.pid == cat.pid);
}

TEST_CASE("unix_peer_inode names a socketpair's other end, and nothing for a pipe") {
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
  struct stat a {}, b {};
  REQUIRE(::fstat(pair[0], &a) == 0);
  REQUIRE(::fstat(pair[1], &b) == 0);
  const ino_t peer = dshpty::proc::unix_peer_inode(a.st_ino);
  if (peer == 0) {
    MESSAGE("no sock_diag for UNIX sockets here: every socket counts as relayed");
  } else {
    CHECK(peer == b.st_ino);
  }
  ::close(pair[0]);
  ::close(pair[1]);
  Pipe pipe;
  struct stat p {};
  REQUIRE(::fstat(pipe.read_end, &p) == 0);
  CHECK(dshpty::proc::unix_peer_inode(p.st_ino) == 0);
}


#endif
