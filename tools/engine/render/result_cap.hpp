// The tools' result cap (--max-result-bytes): how long a result any face shows may be. The
// engine passes it down with every send (SendRequest::max_bytes), so the backend cuts the
// viewport once; the faces cut what no request carries (the motd, a read page, a screen)
// with the same function (text/truncation.hpp), never a viewport again.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dshpty::render {

inline constexpr std::size_t kDefaultMaxResultBytes = 256u << 10;
// MCP's default: a model pays for every byte of a result (about 7,500 tokens here; Claude
// Code's own tool caps at 30,000 characters); terminal_read pages the rest.
inline constexpr std::size_t kMcpDefaultMaxResultBytes = 30'000;
inline constexpr std::size_t kMinMaxResultBytes = 64;
// The largest --max-result-bytes a face takes (4 GiB: past any result worth showing).
inline constexpr std::uint64_t kMaxMaxResultBytes = std::uint64_t{1} << 32;

}  // namespace dshpty::render
