// Errors as values at input boundaries (files, configs, flags).
//
// A Status is either ok or carries a one-line message that names the file or key and what was expected,
// e.g. "run.toml:7: lr must be > 0, got -1". Result<T> is a T or such a message. Broken internal
// invariants are not Statuses: they abort with file:line (SADDLESCOPE_CHECK).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace saddlescope {

class Status {
 public:
  Status() = default;  // ok
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  explicit operator bool() const { return ok(); }
  // REQUIRES: !ok()
  const std::string& message() const { return *message_; }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}           // NOLINT: implicit by design
  Result(Status error) : error_(std::move(error)) {}      // NOLINT; REQUIRES: !error.ok()

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return error_; }
  // REQUIRES: ok()
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  std::optional<T> value_;
  Status error_;
};

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "saddlescope: internal error: %s (%s:%d)\n", expr, file, line);
  std::abort();
}

}  // namespace saddlescope

// Aborts with file:line when an internal invariant is broken; never for bad input.
#define SADDLESCOPE_CHECK(expr) \
  ((expr) ? (void)0 : ::saddlescope::check_failed(#expr, __FILE__, __LINE__))

// Returns early from a function returning Status or Result<T> when `expr` (a Status) is an error.
#define SADDLESCOPE_RETURN_IF_ERROR(expr)         \
  do {                                            \
    ::saddlescope::Status status_ = (expr);       \
    if (!status_.ok()) return status_;            \
  } while (0)
