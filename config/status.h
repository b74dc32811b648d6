// Status: the result of an operation that can fail at run time.
//
// A Status is either OK (no allocation, cheap to return and test) or carries a code and a message
// with the numbers that explain the failure ("chunk 12: count 2048 > capacity 1024"). Runtime
// failures (I/O, corrupt bytes, bad input) are Status values; `assert` is only for programmer errors.
//
// Thread safety: a Status is a value; distinct objects may be used from distinct threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace ingot {

class Status {
 public:
  enum class Code : unsigned char {
    kOk = 0,
    kNotFound = 1,
    kCorruption = 2,
    kInvalidArgument = 3,
    kIOError = 4,
    kBusy = 5,
  };

  Status() noexcept = default;

  static Status OK() noexcept { return Status(); }
  static Status NotFound(std::string_view msg) { return Status(Code::kNotFound, msg); }
  static Status Corruption(std::string_view msg) { return Status(Code::kCorruption, msg); }
  static Status InvalidArgument(std::string_view msg) {
    return Status(Code::kInvalidArgument, msg);
  }
  static Status IOError(std::string_view msg) { return Status(Code::kIOError, msg); }
  static Status Busy(std::string_view msg) { return Status(Code::kBusy, msg); }

  Status(const Status& other) : code_(other.code_), msg_(other.msg_) {}
  Status& operator=(const Status& other) {
    code_ = other.code_;
    msg_ = other.msg_;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const noexcept { return code_ == Code::kOk; }
  bool IsNotFound() const noexcept { return code_ == Code::kNotFound; }
  bool IsCorruption() const noexcept { return code_ == Code::kCorruption; }
  bool IsInvalidArgument() const noexcept { return code_ == Code::kInvalidArgument; }
  bool IsIOError() const noexcept { return code_ == Code::kIOError; }
  bool IsBusy() const noexcept { return code_ == Code::kBusy; }
  Code code() const noexcept { return code_; }

  // The message without the code name; empty for OK.
  std::string_view message() const noexcept { return msg_ ? std::string_view(*msg_) : ""; }

  // "Corruption: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context` and ": ".
  Status WithContext(std::string_view context) const;

 private:
  Status(Code code, std::string_view msg)
      : code_(code), msg_(std::make_shared<const std::string>(msg)) {}

  Code code_ = Code::kOk;
  // Shared so that copies of an error are cheap; null when OK.
  std::shared_ptr<const std::string> msg_;
};

std::string_view CodeName(Status::Code code) noexcept;

}  // namespace ingot

// Returns early from the enclosing function when `expr` is not OK.
#define INGOT_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::ingot::Status _ingot_st = (expr);    \
    if (!_ingot_st.ok()) return _ingot_st; \
  } while (0)
