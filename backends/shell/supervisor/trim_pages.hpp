// Drops from the helper's page tables the pages of its own read-only segments that
// start-up touched. A statically linked glibc maps ~650 KiB of its text and rodata while
// starting (the kernel maps up to 64 KiB around every file fault), and the helper then
// spends its life in poll(): one helper per session, so each page counts, and unmapped page-cache
// pages stay reclaimable under pressure, mapped ones 1,000 sessions deep much less so.
//
// Only segments without PF_W, in an executable without text relocations, so every page
// dropped is an unmodified copy of the file and simply faults back in when used. Best
// effort: any surprise means nothing is dropped.
#pragma once

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace dshpty::supervisor {

namespace trim_detail {

inline bool has_text_relocations(const dl_phdr_info& info) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type != PT_DYNAMIC) continue;
    const auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(info.dlpi_addr + ph.p_vaddr);
    for (; dyn->d_tag != DT_NULL; ++dyn) {
      if (dyn->d_tag == DT_TEXTREL) return true;
      if (dyn->d_tag == DT_FLAGS && (dyn->d_un.d_val & DF_TEXTREL)) return true;
    }
  }
  return false;
}

inline int trim_main_program(dl_phdr_info* info, std::size_t, void*) {
  // The first object dl_iterate_phdr reports is the executable itself.
  if (has_text_relocations(*info)) return 1;
  auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W)) continue;
    std::uintptr_t begin = (info->dlpi_addr + ph.p_vaddr) & ~(page - 1);
    std::uintptr_t end = (info->dlpi_addr + ph.p_vaddr + ph.p_memsz + page - 1) & ~(page - 1);
    // Never a page that a writable segment shares.
    for (int j = 0; j < info->dlpi_phnum; ++j) {
      const ElfW(Phdr)& w = info->dlpi_phdr[j];
      if (w.p_type != PT_LOAD || !(w.p_flags & PF_W)) continue;
      std::uintptr_t wb = (info->dlpi_addr + w.p_vaddr) & ~(page - 1);
      std::uintptr_t we = (info->dlpi_addr + w.p_vaddr + w.p_memsz + page - 1) & ~(page - 1);
      if (wb < end && we > begin) {
        if (wb <= begin) begin = we < end ? we : end;
        else end = wb;
      }
    }
    if (begin >= end) continue;
    // (MADV_RANDOM would not help: this kernel faults around regardless; measured.)
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }
  return 1;
}

}  // namespace trim_detail

inline void trim_executable_pages() { ::dl_iterate_phdr(trim_detail::trim_main_program, nullptr); }

}  // namespace dshpty::supervisor
