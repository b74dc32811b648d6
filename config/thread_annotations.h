// Clang thread-safety annotations and the lock types they check.
//
// libstdc++'s std::mutex carries no capability attributes, so shared state is guarded by these thin
// wrappers instead: Mutex and SharedMutex are capabilities, MutexLock / ReaderLock / WriterLock are
// scoped acquisitions, CondVar waits on a MutexLock. A member marked GUARDED_BY(mu_) is then
// checked at compile time (-Wthread-safety, INGOT_THREAD_SAFETY=ON, the clang build of `./dev
// tsan`): every access outside mu_ is an error. With other compilers the macros expand to nothing
// and the wrappers compile to the std types they hold.
//
// Thread safety: these are the synchronization primitives.
#pragma once

#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define INGOT_TSA(x) __attribute__((x))
#else
#define INGOT_TSA(x)
#endif

#define CAPABILITY(x) INGOT_TSA(capability(x))
#define SCOPED_CAPABILITY INGOT_TSA(scoped_lockable)
#define GUARDED_BY(x) INGOT_TSA(guarded_by(x))
#define PT_GUARDED_BY(x) INGOT_TSA(pt_guarded_by(x))
#define REQUIRES(...) INGOT_TSA(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) INGOT_TSA(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) INGOT_TSA(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) INGOT_TSA(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) INGOT_TSA(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) INGOT_TSA(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) INGOT_TSA(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) INGOT_TSA(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) INGOT_TSA(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) INGOT_TSA(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) INGOT_TSA(assert_shared_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS INGOT_TSA(no_thread_safety_analysis)

namespace ingot {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock (where it cannot see it, e.g. a callback).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

class CAPABILITY("shared_mutex") SharedMutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  void lock_shared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mu_.unlock_shared(); }
  void AssertHeld() const ASSERT_CAPABILITY(this) {}
  void AssertReaderHeld() const ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a Mutex for its scope; CondVar waits release and retake it.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() RELEASE() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

class CondVar {
 public:
  // The predicate runs with the lock held; the analysis cannot see that through the lambda, so
  // predicates that read guarded members say so with Mutex::AssertHeld().
  template <typename Pred>
  void Wait(MutexLock& lock, Pred pred) {
    cv_.wait(lock.lock_, pred);
  }
  void Wait(MutexLock& lock) { cv_.wait(lock.lock_); }
  template <typename Duration, typename Pred>
  bool WaitFor(MutexLock& lock, Duration timeout, Pred pred) {
    return cv_.wait_for(lock.lock_, timeout, pred);
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace ingot
