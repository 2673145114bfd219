// The web page (docs/watch.md): `--web ADDR:PORT` serves, on the host's own libev loop
// (libwebsockets with its libev event library: no thread, no second loop), one page that
// lists the host's sessions and shows each in a read-only xterm.js terminal, fed by the same
// observer hub as `dshpty-repl watch`, and replays a session's recording (its asciicast
// file, streamed, found by session id in the hub's RecordingIndex). Every request needs the random token printed on
// stderr at start (`?token=`; 403 without); ADDR must be a loopback address unless
// `allow_remote`; every response carries a restrictive Content-Security-Policy; a message a
// page sends over its socket closes that socket (an observer only reads).
#pragma once

#include <ev.h>

#include <memory>
#include <string>

#include "dshpty/result.hpp"
#include "observer_hub.hpp"
#include "session_options.hpp"

namespace dshpty::web {

struct WebOptions {
  std::string address;  // "127.0.0.1:8080"; port 0 picks a free one
  bool allow_remote = false;
  // Where xterm.js and its CSS are (the npm package @xterm/xterm); "" : found beside the
  // program (its build tree's web-deps) or in $DSHPTY_WEB_ASSETS.
  std::string assets_dir;
  // The operator's recording directory (--record-dir), opened once at start: the page
  // serves a session's recording relative to it, by the name its session's recording has.
  std::string record_dir;
};

// True when this build has the web page (libwebsockets was found).
bool web_available();

class WebFace {
 public:
  // Starts serving: BACKEND_FAILED naming the cause (an address in use, xterm.js missing),
  // INVALID_ARGUMENT for an address that is not loopback without allow_remote, or one that
  // does not parse.
  static Result<std::unique_ptr<WebFace>> start(struct ev_loop* loop, watch::ObserverHub& hub, const WebOptions& options);
  virtual ~WebFace() = default;
  // The page's address with its token, for the operator ("http://127.0.0.1:PORT/?token=...").
  virtual std::string url() const = 0;
};

// The tools' --web (none when not given: null): starts the page and prints its address with
// the token on stderr, after `program: `. --web with --no-watch is INVALID_ARGUMENT.
Result<std::unique_ptr<WebFace>> start_web_page(struct ev_loop* loop, watch::ObserverHub& hub,
                                                const tool::SessionOptions& options, const char* program);

// "HOST:PORT" checked: HOST an IPv4 literal or "localhost" (loopback unless allow_remote),
// PORT 0..65535. INVALID_ARGUMENT naming what is wrong.
Result<std::pair<std::string, int>> parse_web_address(const std::string& address, bool allow_remote);

}  // namespace dshpty::web
