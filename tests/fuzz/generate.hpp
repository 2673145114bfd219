// Where traces come from: a seed (the suite and the CLI) or raw bytes (libFuzzer). Both
// start with the same prologue (two owners, one backend) so short inputs still do something.
#pragma once

#include <cstddef>
#include <cstdint>

#include "trace.hpp"

namespace dshpty::fuzz {

// A deterministic trace for `seed` (the same on every compiler: no std distributions).
Trace generate(std::uint64_t seed);
// 8 bytes per op: kind (bit 7: nested), a, b, c, d, f as 3 little-endian bytes.
Trace decode_bytes(const std::uint8_t* data, std::size_t size);

}  // namespace dshpty::fuzz
