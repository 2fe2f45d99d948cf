// SerialOps: runs one container's runtime calls one at a time, in arrival order, on the
// work pool, as the Go runc shim's per-process mutex orders them (a Kill waits for a
// Start under way, a Delete for the kill of init's children). Loop thread only.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <utility>

namespace shim {

class SerialOps : public std::enable_shared_from_this<SerialOps> {
 public:
  // An op launches its pool work and calls `finished` (on the loop) once its reply went
  // out; the next op launches then.
  using Finished = std::function<void()>;
  using Op = std::function<void(Finished finished)>;

  void enqueue(Op op) {
    pending_.push_back(std::move(op));
    if (!busy_) launch_next();
  }

  bool busy() const { return busy_; }

 private:
  void launch_next() {
    if (pending_.empty()) {
      busy_ = false;
      return;
    }
    busy_ = true;
    Op op = std::move(pending_.front());
    pending_.pop_front();
    op([self = shared_from_this()] { self->launch_next(); });
  }

  std::deque<Op> pending_;
  bool busy_ = false;
};

}  // namespace shim
