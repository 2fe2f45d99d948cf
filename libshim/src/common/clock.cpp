#include "shim/clock.h"

namespace shim {

std::chrono::system_clock::time_point SystemClock::now() const {
  return std::chrono::system_clock::now();
}

}  // namespace shim
