// Random hex digits from getrandom(2), the one draw every unpredictable name or secret
// uses: a lingering session's key and token, a recording's name part, the web page's token.
#pragma once

#include <sys/random.h>
#include <sys/types.h>

#include <cstddef>
#include <string>

#include "dshpty/result.hpp"

namespace dshpty::proc {

// What draws the bytes: getrandom, or a stand-in in tests.
using RandomSource = ssize_t (*)(void* buf, std::size_t len, unsigned flags);

// 2 * `bytes` lowercase hex digits. A draw interrupted (EINTR) is drawn again; any other
// failure (ENOSYS on an old kernel or under a filter, EFAULT, ...) is BACKEND_FAILED
// naming getrandom at once, never a loop that spins on it.
Result<std::string> random_hex(std::size_t bytes, RandomSource source = ::getrandom);

}  // namespace dshpty::proc
