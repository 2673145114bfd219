#include "proc/random_hex.hpp"

#include <errno.h>

#include "dshpty/errors.hpp"

namespace dshpty::proc {

Result<std::string> random_hex(std::size_t bytes, RandomSource source) {
  std::string raw(bytes, '\0');
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = source(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    // Zero bytes for a non-empty request is no progress either: an error, not a retry.
    if (n <= 0) return make_system_error(Code::BACKEND_FAILED, "getrandom", n < 0 ? errno : EIO);
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes);
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace dshpty::proc
