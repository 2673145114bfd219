// Result<T>: a value or an Error (C++20 has no std::expected). Result<void> (Status) is
// success when it holds no error.
#pragma once

#include <cassert>
#include <functional>
#include <utility>
#include <variant>

#include "dshpty/errors.hpp"

namespace dshpty {

template <class T>
class [[nodiscard]] Result {
 public:
  // A success holding value (owned by the Result).
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  // A failure; `error` must be non-null (asserted).
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {  // NOLINT
    assert(std::get<1>(v_) && "a failed Result needs a non-null Error");
  }

  // True when it holds a value.
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // The value. Precondition: ok() (std::bad_variant_access otherwise).
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // The error, never null. Precondition: !ok() (std::bad_variant_access otherwise).
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;  // success
  Result(Error error) : error_(std::move(error)) {  // NOLINT: implicit by design
    assert(error_ && "a failed Result needs a non-null Error");
  }

  // True when it holds no error.
  bool ok() const noexcept { return !error_; }
  explicit operator bool() const noexcept { return ok(); }
  // The error. Precondition: !ok() (null otherwise).
  const Error& error() const { return error_; }

 private:
  Error error_;
};

using Status = Result<void>;

// Every asynchronous completion: called exactly once, from the loop, never inside the call
// that started the operation.
template <class T>
using Callback = std::function<void(Result<T>)>;

}  // namespace dshpty
