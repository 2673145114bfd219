// Text mode on a terminal: libedit's readline interface driven one key at a time from an
// ev_io on stdin, so the loop keeps running while a command is live.
//
// Why the terminal modes are ours: a terminal's Ctrl-C would send SIGINT to our whole
// foreground process group. So ISIG is off both at the prompt (libedit "setty -d -isig")
// and while a command runs (our own raw mode), and Ctrl-C arrives as the byte 0x03: at the
// prompt libedit ignores it, during a command it cancels the live send. Keys typed during a
// command are kept and replayed into libedit at the next prompt.
#pragma once

#include <functional>
#include <string>

#include <ev.h>
#include <termios.h>

#include "dshpty/loop.hpp"
#include "output_writer.hpp"
#include "text_session.hpp"

namespace dshpty::repl {

class TtyFrontend {
 public:
  // `finished` runs once, after quit/Ctrl-D/EOF disposed the service, with the exit code.
  TtyFrontend(struct ev_loop* loop, TextSession& session, tool::OutputWriter& out, std::function<void(int)> finished);
  ~TtyFrontend();
  TtyFrontend(const TtyFrontend&) = delete;
  TtyFrontend& operator=(const TtyFrontend&) = delete;

  // Runs `line` as if typed (for --open-main), then shows the prompt.
  void start(const std::string& first_line);
  // SIGINT/SIGTERM/SIGHUP from outside.
  void interrupt();
  void terminate();
  void window_changed();

 private:
  static void on_input(struct ev_loop* loop, ev_io* watcher, int revents);
  static void on_line(char* line);
  static int read_key(FILE* stream);
  static char** complete(const char* text, int start, int end);
  static char* next_candidate(const char* text, int state);

  void run_line(const std::string& line);
  void command_done();
  void show_prompt();
  void feed_libedit();
  void quit();
  void set_command_mode();
  void restore_terminal();

  struct ev_loop* loop_;
  TextSession& session_;
  tool::OutputWriter& out_;
  std::function<void(int)> finished_;
  Deferred deferred_;
  ev_io input_;
  termios original_{};
  bool have_termios_ = false;
  bool at_prompt_ = false;
  bool handler_installed_ = false;
  bool quitting_ = false;
  bool input_eof_ = false;
  std::string typeahead_;
};

}  // namespace dshpty::repl
