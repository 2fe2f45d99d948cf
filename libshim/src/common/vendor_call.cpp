#include "common/vendor_call.h"

#include <exception>

#include <fmt/format.h>

namespace shim {

Status vendor_exception_status(std::string_view method, Logger* logger,
                               std::string_view id) noexcept {
  Status status;
  try {
    try {
      throw;
    } catch (const StatusError& error) {
      status = error.status().ok()
                   ? Status(Code::kInternal, fmt::format("{} threw an OK status", method))
                   : error.status();
    } catch (const std::exception& error) {
      status = Status(Code::kInternal, fmt::format("{} threw: {}", method, error.what()));
    } catch (...) {
      status = Status(Code::kInternal, fmt::format("{} threw a non-standard exception", method));
    }
    if (logger != nullptr) {
      LogFields fields = {{"method", method}, {"error", status.message()}};
      if (!id.empty()) fields.emplace_back("id", id);
      logger->error("plug-in code threw", fields);
    }
  } catch (...) {  // formatting or logging ran out of memory: still an error, never a throw
    if (status.ok()) status = Status(Code::kInternal, "plug-in code threw");
  }
  return status;
}

}  // namespace shim
