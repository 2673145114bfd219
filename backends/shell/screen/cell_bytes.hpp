// Cells to bytes and back for the grid's printable-ASCII rows, sixteen cells at a time: a
// flood writes every line's bytes into cells and reads them back out when the row scrolls
// off, and at -O2 the compiler leaves these loops a cell per step (it may not assume the
// char pointer does not alias the cells). GCC's and clang's vector extensions, no ISA of
// their own: the compiler picks the instructions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dshpty::screen {

// `n` printable-ASCII bytes to cells, one code point each.
inline void widen_ascii(const char* bytes, unsigned n, char32_t* cells) {
  typedef std::uint8_t Bytes16 __attribute__((vector_size(16)));
  typedef std::uint32_t Cells16 __attribute__((vector_size(64)));
  unsigned i = 0;
  for (; i + 16 <= n; i += 16) {
    Bytes16 b;
    std::memcpy(&b, bytes + i, sizeof b);
    const Cells16 c = __builtin_convertvector(b, Cells16);
    std::memcpy(cells + i, &c, sizeof c);
  }
  for (; i < n; ++i) cells[i] = static_cast<unsigned char>(bytes[i]);
}

// `n` cells holding printable ASCII or `blank` (0) to bytes, a blank as a space.
inline void narrow_plain(const char32_t* cells, unsigned n, char* bytes) {
  typedef std::uint8_t Bytes16 __attribute__((vector_size(16)));
  typedef std::uint32_t Cells16 __attribute__((vector_size(64)));
  unsigned i = 0;
  for (; i + 16 <= n; i += 16) {
    Cells16 c;
    std::memcpy(&c, cells + i, sizeof c);
    c += __builtin_convertvector(c == 0, Cells16) & ' ';  // all ones where blank: a space
    const Bytes16 b = __builtin_convertvector(c, Bytes16);
    std::memcpy(bytes + i, &b, sizeof b);
  }
  for (; i < n; ++i) bytes[i] = static_cast<char>(cells[i] == 0 ? U' ' : cells[i]);
}

// How many of the `n` bytes at `bytes` are printable ASCII (0x20..0x7E) before the first
// that is not: a flood's line is one run.
inline std::size_t printable_prefix(const char* bytes, std::size_t n) {
  typedef std::uint8_t Bytes16 __attribute__((vector_size(16)));
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Bytes16 b;
    std::memcpy(&b, bytes + i, sizeof b);
    const auto outside = (b - 0x20) >= 0x5F;  // below 0x20 wraps round to above
    std::uint64_t halves[2];
    std::memcpy(halves, &outside, sizeof halves);
    if ((halves[0] | halves[1]) != 0) break;
  }
  while (i < n && static_cast<unsigned char>(bytes[i] - 0x20) < 0x5F) ++i;
  return i;
}

}  // namespace dshpty::screen
