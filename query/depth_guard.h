// DepthGuard: counts nested calls of a recursive-descent parser while it is in scope, so that the
// parser can refuse input nested deeper than its bound before the stack runs out.
#pragma once

namespace ingot {

class DepthGuard {
 public:
  explicit DepthGuard(int* depth) : depth_(depth) { ++*depth_; }
  ~DepthGuard() { --*depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  int* depth_;
};

}  // namespace ingot
