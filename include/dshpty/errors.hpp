// Errors are values with stable codes. One table (DSHPTY_ERROR_CODES) gives each code's
// enum value, its wire name ("OWNER_NOT_LIVE") and its default message, in the manner of
// libuv's UV_ERRNO_MAP. An error has identity: it is held by shared_ptr, and "the exact
// abort reason" means the same pointer.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dshpty {

#define DSHPTY_ERROR_CODES(X)                                                         \
  X(DUPLICATE_BACKEND, "PTY backend type is already registered")                      \
  X(DUPLICATE_NAME, "PTY session name already exists for this owner")                 \
  X(FOREIGN_SESSION, "PTY session ID belongs to another agent")                       \
  X(NO_BACKEND, "no PTY backend is registered for that type")                         \
  X(NO_SESSION, "unknown PTY session ID")                                             \
  X(OWNER_NOT_LIVE, "PTY owner is no longer live")                                    \
  X(SEND_ACTIVE, "a send is already live on this PTY session")                        \
  X(SERVICE_DISPOSING, "PTY service is disposing")                                    \
  X(SESSION_CLOSING, "PTY session is closing")                                        \
  X(SESSION_EXITED, "PTY session has exited")                                         \
  X(INVALID_ARGUMENT, "invalid argument")                                             \
  X(BACKEND_FAILED, "PTY backend failed")                                             \
  X(BACKEND_CLEANUP_FAILED, "PTY backend failed and its cleanup failed too")          \
  X(CLEANUP_FAILED, "failed to clean up PTY lifecycle")                               \
  X(ABORTED, "operation aborted")

enum class Code : int {
#define DSHPTY_ERROR_ENUM_(name, message) name,
  DSHPTY_ERROR_CODES(DSHPTY_ERROR_ENUM_)
#undef DSHPTY_ERROR_ENUM_
};

// The wire name of a code, e.g. "OWNER_NOT_LIVE"; "UNKNOWN" for an out-of-range value.
std::string_view code_name(Code code) noexcept;
// The default message of a code; "unknown error" for an out-of-range value.
std::string_view default_message(Code code) noexcept;

struct ErrorInfo;
// An error value. Null means "no error" only inside Result<void>; every API that hands out
// an Error hands out a non-null one. Immutable once made.
using Error = std::shared_ptr<const ErrorInfo>;

struct ErrorInfo {
  Code code;
  std::string message;
  std::vector<Error> errors;  // children of an aggregate, in the order they happened
  int sys_errno = 0;          // the errno behind a system failure, 0 otherwise
};

// A new error with the code's default message.
Error make_error(Code code);
// A new error with this message and, for an aggregate, its children.
Error make_error(Code code, std::string message, std::vector<Error> children = {}, int sys_errno = 0);
// A new error for a failed system call: "<what>: <strerror(err)>", sys_errno = err.
Error make_system_error(Code code, std::string_view what, int err);

// A backend's setup failed (or was cancelled) and cleaning its partial resources failed
// too. Code BACKEND_CLEANUP_FAILED; errors = {spawn_error, cleanup_error}. The service
// keeps such a failure on the session record until a disposal reports it.
Error make_backend_cleanup_error(Error spawn_error, Error cleanup_error);
// True for a BACKEND_CLEANUP_FAILED error with its two children (what
// make_backend_cleanup_error makes; only it should make that code).
bool is_backend_cleanup_error(const Error& error) noexcept;

// "CODE: message", children indented below it, one per line. For tools and tests.
std::string describe(const Error& error);

}  // namespace dshpty
