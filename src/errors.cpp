#include "dshpty/errors.hpp"

#include <cstring>

namespace dshpty {

namespace {
struct CodeRow {
  std::string_view name;
  std::string_view message;
};
constexpr CodeRow kCodes[] = {
#define DSHPTY_ERROR_ROW_(name, message) {#name, message},
    DSHPTY_ERROR_CODES(DSHPTY_ERROR_ROW_)
#undef DSHPTY_ERROR_ROW_
};
constexpr std::size_t kCodeCount = sizeof kCodes / sizeof kCodes[0];

void describe_into(std::string& out, const Error& error, int depth) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
  out += code_name(error->code);
  out += ": ";
  out += error->message;
  for (const Error& child : error->errors) {
    out += '\n';
    describe_into(out, child, depth + 1);
  }
}
}  // namespace

std::string_view code_name(Code code) noexcept {
  auto i = static_cast<std::size_t>(code);
  return i < kCodeCount ? kCodes[i].name : std::string_view("UNKNOWN");
}

std::string_view default_message(Code code) noexcept {
  auto i = static_cast<std::size_t>(code);
  return i < kCodeCount ? kCodes[i].message : std::string_view("unknown error");
}

Error make_error(Code code) { return make_error(code, std::string(default_message(code))); }

Error make_error(Code code, std::string message, std::vector<Error> children, int sys_errno) {
  return std::make_shared<const ErrorInfo>(
      ErrorInfo{code, std::move(message), std::move(children), sys_errno});
}

Error make_system_error(Code code, std::string_view what, int err) {
  std::string message(what);
  message += ": ";
  message += std::strerror(err);
  return make_error(code, std::move(message), {}, err);
}

Error make_backend_cleanup_error(Error spawn_error, Error cleanup_error) {
  std::string message = "PTY backend setup failed and its cleanup failed too: " +
                        (cleanup_error ? cleanup_error->message : std::string("unknown"));
  return make_error(Code::BACKEND_CLEANUP_FAILED, std::move(message),
                    {std::move(spawn_error), std::move(cleanup_error)});
}

bool is_backend_cleanup_error(const Error& error) noexcept {
  return error && error->code == Code::BACKEND_CLEANUP_FAILED && error->errors.size() == 2;
}

std::string describe(const Error& error) {
  if (!error) return "OK";
  std::string out;
  describe_into(out, error, 0);
  return out;
}

}  // namespace dshpty
