// The web page in a build without libwebsockets: --web says so at start.
#include "web_face.hpp"

namespace dshpty::web {

bool web_available() { return false; }

Result<std::unique_ptr<WebFace>> WebFace::start(struct ev_loop*, watch::ObserverHub&, const WebOptions&) {
  return make_error(Code::BACKEND_FAILED,
                    "this build has no web page: libwebsockets (Debian libwebsockets-dev and "
                    "libwebsockets-evlib-ev) was missing when it was built");
}

}  // namespace dshpty::web
