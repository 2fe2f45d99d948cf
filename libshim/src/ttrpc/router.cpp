#include "shim/ttrpc/router.h"

#include <fmt/format.h>

namespace shim::ttrpc {

void Router::add(std::string_view service, std::string_view method, Handler handler) {
  auto& methods = services_[std::string(service)];
  methods.insert_or_assign(std::string(method), std::move(handler));
}

const Handler* Router::find(std::string_view service, std::string_view method,
                            Status* error) const {
  auto service_it = services_.find(service);
  if (service_it == services_.end()) {
    if (error) *error = Status(Code::kUnimplemented, fmt::format("service {}", service));
    return nullptr;
  }
  auto method_it = service_it->second.find(method);
  if (method_it == service_it->second.end()) {
    if (error) *error = Status(Code::kUnimplemented, fmt::format("method {}", method));
    return nullptr;
  }
  return &method_it->second;
}

bool Router::has_service(std::string_view service) const {
  return services_.find(service) != services_.end();
}

}  // namespace shim::ttrpc
