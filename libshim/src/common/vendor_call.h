// The one guard around every call into a plug-in's code (Manager, RuntimeManager,
// Runtime, Instance): an exception it throws becomes an error Status naming the method,
// so a throwing plug-in fails that one call and never wedges a container, a queue or the
// shim (shim/runtime.h, "Exceptions").
#pragma once

#include <string_view>
#include <utility>

#include "shim/logger.h"
#include "shim/status.h"

namespace shim {

// The Status for the exception being handled; call it only inside a catch block. A
// StatusError keeps its status (a plug-in may throw one on purpose); anything else is
// Internal "<method> threw: <what()>". Logged as an error when `logger` is set, with the
// container `id` if not empty.
Status vendor_exception_status(std::string_view method, Logger* logger = nullptr,
                               std::string_view id = {}) noexcept;

// Runs `call` (returning Status) and returns its Status, or the exception's (above).
template <class Call>
Status vendor_call(std::string_view method, Call&& call, Logger* logger = nullptr,
                   std::string_view id = {}) noexcept {
  try {
    return std::forward<Call>(call)();
  } catch (...) {
    return vendor_exception_status(method, logger, id);
  }
}

}  // namespace shim
