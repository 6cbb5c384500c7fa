#include "adapters/conn/imports.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace mw::conn {
namespace {

// The relocations that fill a GOT entry with a function's address: a call through the PLT
// (JUMP_SLOT), or one through the GOT (GLOB_DAT, -fno-plt). 64-bit x86 and Arm.
#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT, kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT, kGlobDat = R_AARCH64_GLOB_DAT;
#else
constexpr uint32_t kJumpSlot = ~0u, kGlobDat = ~0u;  // none found: hook_import says so
#endif

struct Search {
  std::string soname;
  const char* symbol = nullptr;
  bool loaded = false;
  std::vector<void**> slots;
  uintptr_t relro_lo = 0, relro_hi = 0;  // read-only after relocation (PT_GNU_RELRO)
};

// One loaded object (dl_iterate_phdr): when it is the library, the GOT entries of `symbol`.
int visit(dl_phdr_info* info, size_t, void* arg) {
  auto& s = *static_cast<Search*>(arg);
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  const char* file = std::strrchr(name, '/');
  file = file ? file + 1 : name;
  if (std::strncmp(file, s.soname.c_str(), s.soname.size()) != 0) return 0;
  s.loaded = true;
  const uintptr_t base = info->dlpi_addr;
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(base + ph.p_vaddr);
    if (ph.p_type == PT_GNU_RELRO) s.relro_lo = base + ph.p_vaddr, s.relro_hi = s.relro_lo + ph.p_memsz;
  }
  if (!dyn) return 1;
  // glibc's loader rebases these entries in place; an address below the base is still an offset.
  auto at = [base](ElfW(Addr) p) { return p < base ? base + p : static_cast<uintptr_t>(p); };
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* jmprel = nullptr, *rela = nullptr;
  size_t jmprel_size = 0, rela_size = 0;
  bool plt_rela = true;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(at(d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(at(d->d_un.d_ptr)); break;
      case DT_JMPREL: jmprel = reinterpret_cast<const ElfW(Rela)*>(at(d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
      case DT_PLTREL: plt_rela = d->d_un.d_val == DT_RELA; break;
      case DT_RELA: rela = reinterpret_cast<const ElfW(Rela)*>(at(d->d_un.d_ptr)); break;
      case DT_RELASZ: rela_size = d->d_un.d_val; break;
      default: break;
    }
  }
  if (!symtab || !strtab || !plt_rela) return 1;
  auto scan = [&](const ElfW(Rela) * r, size_t bytes) {
    for (size_t k = 0; r && k < bytes / sizeof *r; ++k) {
      const uint32_t type = ELF64_R_TYPE(r[k].r_info);
      if (type != kJumpSlot && type != kGlobDat) continue;
      if (std::strcmp(strtab + symtab[ELF64_R_SYM(r[k].r_info)].st_name, s.symbol) == 0)
        s.slots.push_back(reinterpret_cast<void**>(base + r[k].r_offset));
    }
  };
  scan(jmprel, jmprel_size);
  scan(rela, rela_size);
  return 1;
}

}  // namespace

bool hook_import(const std::string& soname, const char* symbol, void* hook, void** real, std::string& why) {
  static std::mutex mu;
  std::lock_guard lk(mu);
  Search s;
  s.soname = soname;
  s.symbol = symbol;
  dl_iterate_phdr(visit, &s);
  if (!s.loaded) {
    why = soname + " is not loaded";
    return false;
  }
  if (s.slots.empty()) {
    why = soname + " imports no " + symbol + " that can be seen here";
    return false;
  }
  // What the library's calls reached: the first definition in the global scope (libc's, or a
  // sanitizer's interceptor of it). The GOT entry itself may still hold a lazy-binding stub.
  void* fn = dlsym(RTLD_DEFAULT, symbol);
  if (!fn || fn == hook) {
    why = std::string("no ") + symbol + " to call on";
    return false;
  }
  __atomic_store_n(real, fn, __ATOMIC_SEQ_CST);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (void** slot : s.slots) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(slot);
    void* lo = reinterpret_cast<void*>(at & ~(page - 1));
    if (mprotect(lo, page, PROT_READ | PROT_WRITE) != 0) {
      why = std::string("making ") + soname + "'s GOT writable: " + std::strerror(errno);
      return false;
    }
    __atomic_store_n(slot, hook, __ATOMIC_SEQ_CST);
    if (at >= s.relro_lo && at < s.relro_hi) mprotect(lo, page, PROT_READ);  // read-only again
  }
  return true;
}

}  // namespace mw::conn
