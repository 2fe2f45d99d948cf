// Subscription: owns a registration (an exit subscriber, a signal handler...); destroying
// or resetting it unregisters. Move-only.
#pragma once

#include <functional>
#include <utility>

namespace shim {

class Subscription {
 public:
  Subscription() = default;
  // Owns a registration; `cancel` undoes it (run once, by reset() or the destructor).
  explicit Subscription(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
  ~Subscription() { reset(); }  // reset()

  // Takes over `other`'s registration.
  Subscription(Subscription&& other) noexcept : cancel_(std::move(other.cancel_)) {
    other.cancel_ = nullptr;
  }
  // Unregisters its own registration, then takes over `other`'s.
  Subscription& operator=(Subscription&& other) noexcept {
    if (this == &other) return *this;
    reset();
    cancel_ = std::move(other.cancel_);
    other.cancel_ = nullptr;
    return *this;
  }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // Unregisters now. After it returns no new callback starts; one already running on
  // another thread may still finish.
  void reset() {
    auto cancel = std::move(cancel_);
    cancel_ = nullptr;
    if (cancel) cancel();
  }
  // Whether it still holds a registration.
  bool active() const { return static_cast<bool>(cancel_); }

 private:
  std::function<void()> cancel_;
};

}  // namespace shim
