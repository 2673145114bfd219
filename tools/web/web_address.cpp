#include <arpa/inet.h>

#include <cstdio>
#include <string>

#include "web_face.hpp"

namespace dshpty::web {

Result<std::pair<std::string, int>> parse_web_address(const std::string& address, bool allow_remote) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    return make_error(Code::INVALID_ARGUMENT, "--web takes ADDR:PORT (127.0.0.1:8080), got \"" + address + "\"");
  std::string host = address.substr(0, colon);
  const std::string port_text = address.substr(colon + 1);
  if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port_text) > 65535)
    return make_error(Code::INVALID_ARGUMENT, "--web: the port must be 0..65535, got \"" + port_text + "\"");
  if (host == "localhost") host = "127.0.0.1";
  in_addr ip{};
  if (::inet_pton(AF_INET, host.c_str(), &ip) != 1)
    return make_error(Code::INVALID_ARGUMENT, "--web: the address must be an IPv4 address, got \"" + host + "\"");
  const bool loopback = (ntohl(ip.s_addr) >> 24) == 127;
  if (!loopback && !allow_remote)
    return make_error(Code::INVALID_ARGUMENT, "--web " + address +
                                                  " is not a loopback address: anyone who can reach it could try "
                                                  "the token; give --web-allow-remote to mean it");
  return std::make_pair(host, std::stoi(port_text));
}

Result<std::unique_ptr<WebFace>> start_web_page(struct ev_loop* loop, watch::ObserverHub& hub,
                                                const tool::SessionOptions& options, const char* program) {
  if (!options.web) return std::unique_ptr<WebFace>();
  if (!options.watch) return make_error(Code::INVALID_ARGUMENT, "--web and --no-watch: with --no-watch nobody may watch");
  auto page = WebFace::start(loop, hub, WebOptions{*options.web, options.web_allow_remote, "", options.record_dir.value_or("")});
  if (!page) return page.error();
  // The operator's way in, as Jupyter prints its own: the token is in the address.
  std::fprintf(stderr, "%s: web page at %s\n", program, (*page)->url().c_str());
  return page;
}

}  // namespace dshpty::web
