#include "landlock_scope.hpp"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace dshpty::supervisor {

namespace {

// The kernel's struct landlock_ruleset_attr as of ABI 6 (the system headers may be older).
struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};
constexpr std::uint64_t kScopeAbstractUnixSocket = 1ULL << 0;
constexpr unsigned kCreateRulesetVersion = 1U << 0;
constexpr long kFirstScopedAbi = 6;

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

}  // namespace

ScopeResult scope_abstract_unix_sockets() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  if (abi < kFirstScopedAbi) return ScopeResult::unsupported;
  RulesetAttr attr{0, 0, kScopeAbstractUnixSocket};
  long fd = ::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (fd < 0) return ScopeResult::failed;
  long rc = ::syscall(SYS_landlock_restrict_self, fd, 0);
  int err = errno;
  ::close(static_cast<int>(fd));
  errno = err;
  return rc == 0 ? ScopeResult::scoped : ScopeResult::failed;
}

}  // namespace dshpty::supervisor
