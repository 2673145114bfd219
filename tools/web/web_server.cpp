// The web page over libwebsockets on the host's libev loop (web_face.hpp).
#include <fcntl.h>
#include <libwebsockets.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "proc/random_hex.hpp"
#include "web_face.hpp"
#include "web_page.hpp"

namespace dshpty::web {

bool web_available() { return true; }

namespace {

using Json = nlohmann::json;

// Scripts only from this page's own origin, nothing else loaded or framed. Styles may be
// inline: xterm.js's renderer writes a <style> element for its cells and theme.
constexpr const char* kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; "
    "img-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// Compares in constant time for equal lengths.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Where @xterm/xterm is: the option, $DSHPTY_WEB_ASSETS, else the build tree beside us.
std::string find_assets(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("DSHPTY_WEB_ASSETS"); env && *env) return env;
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  std::string dir(exe, static_cast<std::size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  return dir.substr(0, dir.rfind('/')) + "/web-deps/node_modules/@xterm/xterm";
}

class Server;

// One page's socket: an observer of one session. Frames wait in `pending` until lws says
// the socket is writable; a newer frame replaces one not yet written.
class SocketObserver final : public watch::Observer {
 public:
  SocketObserver(Server& server, struct lws* wsi) : server_(server), wsi_(wsi) {}
  ~SocketObserver() override;
  bool ready() const override { return pending_.empty() && !closing_; }
  void deliver(const std::string& frame) override {
    pending_ = frame;
    lws_callback_on_writable(wsi_);
  }
  void ended(const std::string& why) override {
    pending_ = Json{{"ended", why}}.dump(-1, ' ', false, Json::error_handler_t::replace);
    closing_ = true;
    lws_callback_on_writable(wsi_);
  }
  // Writes the pending frame; -1 when the socket is to close now.
  int on_writable();

  Server& server_;
  struct lws* wsi_;
  std::string pending_;
  bool closing_ = false;
};

struct HttpState {
  std::string* body;  // what is left to write (owned)
  std::size_t sent;
  // A recording streamed from its file instead (a chunk at a time: a huge recording costs
  // the host one chunk per replay, never the file): the descriptor (-1: none) and the bytes
  // still to send of the size it had when opened. lws zeroes this state: `streaming` says
  // whether `file` is ours.
  bool streaming;
  int file;
  std::uint64_t file_left;
};

// Replays streamed at once, at most (one descriptor each); one past them is 503.
constexpr unsigned kMaxReplays = 16;
// A replay's reader takes bytes as it plays them (1x: minutes for a long recording, the
// socket full meanwhile): lws's 5 s idle timeout would cut it, so a streamed recording may
// stall this long between two chunks before the host drops it and frees its slot.
constexpr int kReplayStallSeconds = 600;
constexpr std::size_t kChunk = 16 * 1024;

struct SocketState {
  SocketObserver* observer;
};

int http_callback(struct lws* wsi, enum lws_callback_reasons reason, void* user, void* in, size_t len);
int socket_callback(struct lws* wsi, enum lws_callback_reasons reason, void* user, void* in, size_t len);

const struct lws_protocols kProtocols[] = {
    {"http", http_callback, sizeof(HttpState), 0, 0, nullptr, 0},
    {"dshpty-watch", socket_callback, sizeof(SocketState), 4096, 0, nullptr, 0},
    {nullptr, nullptr, 0, 0, 0, nullptr, 0},
};

class Server final : public WebFace {
 public:
  Server(watch::ObserverHub& hub, std::string assets, std::string host, std::string token, std::string record_dir)
      : hub_(hub),
        assets_(std::move(assets)),
        host_(std::move(host)),
        token_(std::move(token)),
        record_dir_path_(std::move(record_dir)) {}
  ~Server() override {
    if (context_) lws_context_destroy(context_);
    if (record_dir_ >= 0) ::close(record_dir_);
  }
  std::string url() const override {
    return "http://" + host_ + ":" + std::to_string(port_) + "/?token=" + token_;
  }

  Status listen(struct ev_loop* loop, int port) {
    xterm_js_ = read_file(assets_ + "/lib/xterm.js");
    xterm_css_ = read_file(assets_ + "/css/xterm.css");
    if (xterm_js_.empty() || xterm_css_.empty())
      return make_error(Code::BACKEND_FAILED, "xterm.js is not at " + assets_ +
                                                  " (the npm package @xterm/xterm; tools/dev installs it)");
    if (!record_dir_path_.empty()) {
      // Once, now, as the backend holds its own: a link swapped in at the path later is never followed.
      record_dir_ = ::open(record_dir_path_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    lws_set_log_level(LLL_ERR, nullptr);
    lws_context_creation_info info;
    std::memset(&info, 0, sizeof info);
    info.port = port;
    info.iface = host_.c_str();
    info.protocols = kProtocols;
    info.gid = -1;
    info.uid = -1;
    info.user = this;
    void* loops[] = {loop};
    info.foreign_loops = loops;
    info.options = LWS_SERVER_OPTION_LIBEV | LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND |
                   LWS_SERVER_OPTION_DISABLE_IPV6;
    context_ = lws_create_context(&info);
    if (!context_)
      return make_error(Code::BACKEND_FAILED, "--web " + host_ + ":" + std::to_string(port) +
                                                  ": cannot listen there (in use, or libwebsockets-evlib-ev missing)");
    struct lws_vhost* vhost = lws_get_vhost_by_name(context_, "default");
    port_ = vhost ? lws_get_vhost_listen_port(vhost) : port;
    return {};
  }

  bool authorized(struct lws* wsi) const {
    char buf[128];
    const char* value = lws_get_urlarg_by_name(wsi, "token=", buf, sizeof buf);  // points into buf
    return value != nullptr && same_token(value, token_);
  }

  // What a GET of `path` answers: the status, the type and the body.
  void route(const std::string& path, unsigned& status, std::string& type, std::string& body) const {
    status = 200;
    if (path == "/") {
      type = "text/html; charset=utf-8";
      body = page_html(token_);
    } else if (path == "/app.js") {
      type = "text/javascript; charset=utf-8";
      body = page_script();
    } else if (path == "/app.css") {
      type = "text/css; charset=utf-8";
      body = page_style();
    } else if (path == "/xterm.js") {
      type = "text/javascript; charset=utf-8";
      body = xterm_js_;
    } else if (path == "/xterm.css") {
      type = "text/css; charset=utf-8";
      body = xterm_css_;
    } else if (path == "/api/recordings") {
      type = "application/json";
      Json list = Json::array();
      for (const auto& rec : hub_.recordings().sessions()) {
        list.push_back(Json{{"sessionId", rec.session_id},
                            {"owner", rec.owner},
                            {"name", rec.name ? Json(*rec.name) : Json(nullptr)},
                            {"live", rec.live}});
      }
      body = Json{{"host", static_cast<long>(::getpid())}, {"recordings", std::move(list)}}.dump(
          -1, ' ', false, Json::error_handler_t::replace);
    } else if (path == "/api/sessions") {
      type = "application/json";
      Json sessions = Json::array();
      for (const auto& [view, count] : hub_.sessions()) {
        Json row = Json::parse(watch::ObserverHub::encode_frame(view, count, std::nullopt));
        row.erase("lines");
        row.erase("cursor");
        sessions.push_back(std::move(row));
      }
      body = Json{{"host", static_cast<long>(::getpid())}, {"sessions", std::move(sessions)}}.dump(
          -1, ' ', false, Json::error_handler_t::replace);
    } else {
      status = 404;
      type = "text/plain";
      body = "not found\n";
    }
  }

  // The recording of the session the request names (its id, exactly), opened read-only
  // relative to the directory held since the start, by the name the session's own
  // recording has: never a path from the request, never a file of a session this host did
  // not run, never through a link. -1 with the status (404, 503) otherwise.
  int open_recording(struct lws* wsi, unsigned& status, std::uint64_t& size) const {
    status = 404;
    char buf[256];
    const char* session = lws_get_urlarg_by_name(wsi, "session=", buf, sizeof buf);
    if (!session || record_dir_ < 0) return -1;
    auto rec = hub_.recordings().find(session);
    if (!rec) return -1;
    if (replays_ >= kMaxReplays) {
      status = 503;
      return -1;
    }
    const int fd = ::openat(record_dir_, rec->file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return -1;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return -1;
    }
    status = 200;
    size = static_cast<std::uint64_t>(st.st_size);
    return fd;
  }

  watch::ObserverHub& hub_;
  std::string assets_;
  std::string host_;
  std::string token_;
  std::string xterm_js_, xterm_css_;
  struct lws_context* context_ = nullptr;
  int port_ = 0;
  std::string record_dir_path_;
  int record_dir_ = -1;
  unsigned replays_ = 0;  // recordings being streamed
};

Server& server_of(struct lws* wsi) {
  return *static_cast<Server*>(lws_context_user(lws_get_context(wsi)));
}

SocketObserver::~SocketObserver() { server_.hub_.remove(this); }

int SocketObserver::on_writable() {
  if (pending_.empty()) return closing_ ? -1 : 0;
  std::string buf(LWS_PRE, '\0');
  buf += pending_;
  pending_.clear();
  if (lws_write(wsi_, reinterpret_cast<unsigned char*>(buf.data()) + LWS_PRE, buf.size() - LWS_PRE, LWS_WRITE_TEXT) < 0)
    return -1;
  if (closing_) {
    lws_close_reason(wsi_, LWS_CLOSE_STATUS_NORMAL, nullptr, 0);
    return -1;
  }
  server_.hub_.ready_again(this);
  return 0;
}

// Headers (with the CSP) for a body of `length` bytes.
int write_headers(struct lws* wsi, unsigned status, const std::string& type, std::uint64_t length) {
  unsigned char buf[LWS_PRE + 2048];
  unsigned char* start = buf + LWS_PRE;
  unsigned char* p = start;
  unsigned char* end = buf + sizeof buf - 1;
  if (lws_add_http_common_headers(wsi, status, type.c_str(), static_cast<lws_filepos_t>(length), &p, end)) return 1;
  const char* extra[][2] = {{"content-security-policy:", kCsp},
                            {"x-content-type-options:", "nosniff"},
                            {"referrer-policy:", "no-referrer"},
                            {"cache-control:", "no-store"}};
  for (const auto& h : extra) {
    if (lws_add_http_header_by_name(wsi, reinterpret_cast<const unsigned char*>(h[0]),
                                    reinterpret_cast<const unsigned char*>(h[1]), static_cast<int>(std::strlen(h[1])),
                                    &p, end))
      return 1;
  }
  return lws_finalize_write_http_header(wsi, start, &p, end) ? 1 : 0;
}

// Headers and the body; the body goes out as the socket takes it.
int respond(struct lws* wsi, HttpState& state, unsigned status, const std::string& type, std::string body) {
  if (write_headers(wsi, status, type, body.size())) return 1;
  state.body = new std::string(std::move(body));
  state.sent = 0;
  lws_callback_on_writable(wsi);
  return 0;
}

void close_file(Server& server, HttpState& state) {
  if (!state.streaming) return;
  ::close(state.file);
  state.streaming = false;
  --server.replays_;
}

// The next chunk of a streamed recording; -1 to close (the file ended early, the socket failed).
int write_file_chunk(struct lws* wsi, Server& server, HttpState& state) {
  std::string buf(LWS_PRE + kChunk, '\0');
  const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(state.file_left, kChunk));
  ssize_t n;
  do n = ::read(state.file, buf.data() + LWS_PRE, want);
  while (n < 0 && errno == EINTR);
  // A file cut short since it was opened (a recording that failed and was truncated to its
  // last whole line): the length promised cannot be kept, so the connection ends.
  if (n <= 0) {
    close_file(server, state);
    return -1;
  }
  const bool last = static_cast<std::uint64_t>(n) == state.file_left;
  if (lws_write(wsi, reinterpret_cast<unsigned char*>(buf.data()) + LWS_PRE, static_cast<std::size_t>(n),
                last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != static_cast<int>(n)) {
    close_file(server, state);
    return -1;
  }
  state.file_left -= static_cast<std::uint64_t>(n);
  if (!last) {
    lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, kReplayStallSeconds);
    lws_callback_on_writable(wsi);
    return 0;
  }
  close_file(server, state);
  return lws_http_transaction_completed(wsi) ? -1 : 0;
}

int http_callback(struct lws* wsi, enum lws_callback_reasons reason, void* user, void* in, size_t len) {
  auto* state = static_cast<HttpState*>(user);
  switch (reason) {
    case LWS_CALLBACK_HTTP: {
      Server& server = server_of(wsi);
      const std::string path(static_cast<const char*>(in), len);
      state->body = nullptr;
      state->streaming = false;
      if (!server.authorized(wsi)) return respond(wsi, *state, 403, "text/plain", "a token is required\n");
      unsigned status = 0;
      if (path == "/api/recording") {
        std::uint64_t size = 0;
        const int fd = server.open_recording(wsi, status, size);
        if (fd < 0)
          return respond(wsi, *state, status, "text/plain",
                         status == 503 ? "too many replays at once\n" : "no such recording\n");
        state->streaming = true;
        state->file = fd;
        state->file_left = size;
        ++server.replays_;
        if (write_headers(wsi, 200, "application/x-asciicast; charset=utf-8", size)) return 1;
        lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, kReplayStallSeconds);
        if (size == 0) {
          close_file(server, *state);
          return lws_http_transaction_completed(wsi) ? -1 : 0;
        }
        lws_callback_on_writable(wsi);
        return 0;
      }
      std::string type, body;
      server.route(path, status, type, body);
      return respond(wsi, *state, status, type, std::move(body));
    }
    case LWS_CALLBACK_HTTP_WRITEABLE: {
      if (state && state->streaming) return write_file_chunk(wsi, server_of(wsi), *state);
      if (!state || !state->body) return 0;
      const std::size_t left = state->body->size() - state->sent;
      const std::size_t n = std::min(left, kChunk);
      std::string buf(LWS_PRE, '\0');
      buf.append(*state->body, state->sent, n);
      const bool last = n == left;
      if (lws_write(wsi, reinterpret_cast<unsigned char*>(buf.data()) + LWS_PRE, n,
                    last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != static_cast<int>(n))
        return 1;
      state->sent += n;
      if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
      }
      delete state->body;
      state->body = nullptr;
      return lws_http_transaction_completed(wsi) ? -1 : 0;
    }
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
      if (state && state->body) {
        delete state->body;
        state->body = nullptr;
      }
      if (state) close_file(server_of(wsi), *state);
      return 0;
    default:
      return lws_callback_http_dummy(wsi, reason, user, in, len);
  }
}

int socket_callback(struct lws* wsi, enum lws_callback_reasons reason, void* user, void* /*in*/, size_t /*len*/) {
  auto* state = static_cast<SocketState*>(user);
  switch (reason) {
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
      // The token before the upgrade: nonzero refuses it.
      return server_of(wsi).authorized(wsi) ? 0 : 1;
    case LWS_CALLBACK_ESTABLISHED: {
      Server& server = server_of(wsi);
      state->observer = new SocketObserver(server, wsi);
      char buf[256];
      const char* session = lws_get_urlarg_by_name(wsi, "session=", buf, sizeof buf);
      auto added = server.hub_.add(session ? session : "", state->observer);
      if (!added) {
        state->observer->pending_ = Json{{"error", Json{{"code", std::string(code_name(added.error()->code))},
                                                        {"message", added.error()->message}}}}
                                        .dump(-1, ' ', false, Json::error_handler_t::replace);
        state->observer->closing_ = true;
        lws_callback_on_writable(wsi);
      }
      return 0;
    }
    case LWS_CALLBACK_SERVER_WRITEABLE:
      return state->observer ? state->observer->on_writable() : 0;
    case LWS_CALLBACK_RECEIVE: {
      // An observer only reads: whatever a page sends ends its socket, and reaches nothing.
      static constexpr char kWhy[] = "an observer only reads";
      lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION,
                       reinterpret_cast<unsigned char*>(const_cast<char*>(kWhy)), sizeof kWhy - 1);
      return -1;
    }
    case LWS_CALLBACK_CLOSED:
      delete state->observer;
      state->observer = nullptr;
      return 0;
    default:
      return 0;
  }
}

}  // namespace

Result<std::unique_ptr<WebFace>> WebFace::start(struct ev_loop* loop, watch::ObserverHub& hub, const WebOptions& options) {
  auto address = parse_web_address(options.address, options.allow_remote);
  if (!address) return address.error();
  auto token = proc::random_hex(16);  // the page's secret: 32 hex digits in its URL
  if (!token) return token.error();
  auto server = std::make_unique<Server>(hub, find_assets(options.assets_dir), address->first, std::move(*token),
                                         options.record_dir);
  if (Status listening = server->listen(loop, address->second); !listening) return listening.error();
  return std::unique_ptr<WebFace>(std::move(server));
}

}  // namespace dshpty::web
