// Router: service + method -> handler. Unknown names answer as the Go server does.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "shim/status.h"
#include "shim/ttrpc/call.h"

namespace shim::ttrpc {

// Maps service + method to a handler (what the ttrpc server dispatches by).
class Router {
 public:
  // Registers `handler` for `service`/`method` (replacing an earlier one).
  void add(std::string_view service, std::string_view method, Handler handler);

  // The handler, or nullptr with `*error` = Unimplemented "service <name>" when the
  // service is unknown, "method <name>" when only the method is.
  const Handler* find(std::string_view service, std::string_view method, Status* error) const;

  // Whether any method of `service` is registered.
  bool has_service(std::string_view service) const;

 private:
  std::map<std::string, std::map<std::string, Handler, std::less<>>, std::less<>> services_;
};

}  // namespace shim::ttrpc
