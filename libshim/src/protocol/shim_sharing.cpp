#include "protocol/shim_sharing.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/asio/io_context.hpp>

#include "shim/fs.h"
#include "shim/pb/containerd/task_v2.pb.h"
#include "shim/task_service.h"
#include "shim/ttrpc/client.h"
#include "socket/sha256.h"
#include "socket/unix_listener.h"

namespace shim::detail {
namespace {

constexpr std::string_view kKeeperName = "reservations";

std::vector<std::string> keys_of(
    const std::map<std::string, std::chrono::steady_clock::time_point>& map) {
  std::vector<std::string> keys;
  for (const auto& entry : map) keys.push_back(entry.first.empty() ? "(unknown)" : entry.first);
  return keys;
}

// Our own dial, not the client's: a shim whose backlog is full (it accepts nothing)
// answers EAGAIN, which is not "ending" (Unavailable, tried again) but wedged.
Status dial_shared_shim(const std::string& address, int* fd) {
  std::string path;
  if (Status s = ttrpc::unix_socket_path(address, &path); !s.ok()) return s;
  int err = 0;
  if (Status s = dial_unix(path, fd, &err); !s.ok() || *fd >= 0) return s;
  if (err == EAGAIN) {
    return Status(Code::kResourceExhausted,
                  fmt::format("dial {}: its backlog is full (it accepts nothing)", path));
  }
  return Status(Code::kUnavailable, fmt::format("dial {}: {}", path, std::strerror(err)));
}

}  // namespace

Status reserve_shared_shim(const std::string& address, const std::string& id,
                           const std::string& bundle, std::chrono::milliseconds timeout) {
  int fd = -1;
  if (Status s = dial_shared_shim(address, &fd); !s.ok()) return s;
  boost::asio::io_context io(1);
  auto client = ttrpc::TtrpcClient::create(io.get_executor());
  Status result(Code::kUnknown, "no answer");
  client->adopt(fd, [&](Status connected) {
    if (!connected.ok()) {
      result = Status(Code::kUnavailable, connected.message());
      return;
    }
    pb::sharing::ReserveRequest request;
    request.set_id(id);
    request.set_bundle(bundle);
    ttrpc::CallOptions options;
    options.timeout = timeout;
    client->call(std::string(kSharingService), std::string(kReserveMethod),
                 request.SerializeAsString(), std::move(options),
                 [&](Status status, std::string payload) {
                   pb::sharing::ReserveResponse response;
                   result = status;
                   if (status.ok() && !response.ParseFromString(payload)) {
                     result = Status(Code::kInternal, "the answer is no ReserveResponse");
                   }
                   client->close();
                 });
  });
  io.run();
  return result;
}

std::string shared_group_key(const DaemonOptions& options) {
  struct stat exe {};
  if (::stat("/proc/self/exe", &exe) != 0) exe = {};
  Sha256 digest;
  digest.update(fmt::format("{}:{}:{}.{}\n{}", exe.st_dev, exe.st_ino, exe.st_mtim.tv_sec,
                            exe.st_mtim.tv_nsec, options.cgroup));
  Sha256::Digest bytes = digest.finish();
  std::string key = options.shared_group + "-";
  for (std::size_t i = 0; i < 6; ++i) key += fmt::format("{:02x}", bytes[i]);
  return key;
}

std::optional<std::chrono::milliseconds> shared_linger_from_env() {
  const char* text = std::getenv(kSharedLingerEnv);
  if (text == nullptr) return std::nullopt;
  std::string_view value(text);
  long long ms = -1;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
  if (ec != std::errc() || end != value.data() + value.size() || ms < 0) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

ShimReservations::ShimReservations(boost::asio::any_io_executor executor, ShutdownControl& shutdown,
                                   Logger& logger, std::function<bool()> ending,
                                   bool follow_log_fifo, std::chrono::milliseconds window)
    : shutdown_(shutdown),
      logger_(logger),
      ending_(std::move(ending)),
      follow_log_fifo_(follow_log_fifo),
      window_(window),
      timer_(executor) {
  shutdown_.set_keeper(std::string(kKeeperName), [this] { return why_kept(); });
}

ShimReservations::~ShimReservations() { shutdown_.remove_keeper(kKeeperName); }

void ShimReservations::wrap_create(ttrpc::Router& router, std::string_view service) {
  Status missing;
  const ttrpc::Handler* found = router.find(service, "Create", &missing);
  if (found == nullptr) return;  // a plug-in without that task API version
  router.add(service, "Create",
             [this, create = *found](const ttrpc::CallInfo& call, std::string_view payload,
                                     ttrpc::Responder responder) {
               task::CreateTaskRequest request;
               if (request.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
                 release(request.id());
                 follow_log(request.bundle(), false);
               }
               create(call, payload, std::move(responder));
             });
}

void ShimReservations::register_on(ttrpc::Router& router) {
  wrap_create(router, kTaskServiceV2);
  wrap_create(router, kTaskServiceV3);
  router.add(kSharingService, kReserveMethod,
             ttrpc::typed_handler<pb::sharing::ReserveRequest, pb::sharing::ReserveResponse>(
                 [this](const ttrpc::CallInfo&, pb::sharing::ReserveRequest request,
                        ttrpc::Reply<pb::sharing::ReserveResponse> reply) {
                   on_reserve(std::move(request), std::move(reply));
                 }));
}

bool ShimReservations::reserve(const std::string& id) {
  if (ending_()) return false;
  reserved_[id] = std::chrono::steady_clock::now() + window_;
  arm();
  return true;
}

void ShimReservations::release(const std::string& id) {
  if (reserved_.erase(id) > 0) arm();
}

// The timer waits for the earliest window's end; none: it waits for nothing.
void ShimReservations::arm() {
  timer_.cancel();
  if (reserved_.empty()) return;
  auto earliest = reserved_.begin()->second;
  for (const auto& entry : reserved_) earliest = std::min(earliest, entry.second);
  timer_.expires_at(earliest);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) expired();
  });
}

void ShimReservations::on_reserve(pb::sharing::ReserveRequest request,
                                  ttrpc::Reply<pb::sharing::ReserveResponse> reply) {
  if (!reserve(request.id())) {
    return reply.fail(Status(Code::kUnavailable, "the shared shim is shutting down"));
  }
  follow_log(request.bundle(), true);
  logger_.info("shared shim reserved", {{"id", request.id()}, {"window_ms", window_.count()}});
  pb::sharing::ReserveResponse response;
  response.set_pid(static_cast<std::uint32_t>(::getpid()));
  reply(response);
}

// The first task's bundle (this daemon's stderr) goes with that task: containerd then
// stops reading its FIFO, and the shim's log would be lost.
void ShimReservations::follow_log(const std::string& bundle, bool only_if_unread) {
  if (!follow_log_fifo_ || bundle.empty()) return;
  if (only_if_unread) {
    pollfd present{.fd = STDERR_FILENO, .events = POLLOUT, .revents = 0};
    // POLLERR on a FIFO's write end: its reader is gone.
    if (::poll(&present, 1, 0) != 1 || (present.revents & POLLERR) == 0) return;
  }
  std::string path = bundle + "/log";
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st {};
  if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
    ::dup2(fd, STDERR_FILENO);
  } else {
    logger_.warn("shim log not moved",
                 {{"path", path}, {"error", fd < 0 ? std::strerror(errno) : "not a FIFO"}});
  }
  if (fd >= 0) ::close(fd);
}

void ShimReservations::expired() {
  auto now = std::chrono::steady_clock::now();
  std::size_t before = reserved_.size();
  std::erase_if(reserved_, [&](const auto& entry) { return entry.second <= now; });
  if (reserved_.size() == before) return arm();  // woken early
  if (!reserved_.empty()) return arm();          // others still wait for their Create
  // The last reserved Create never came: unused now, the shim lingers, then ends.
  logger_.warn("shim reservation ended without its task's Create");
  std::string kept = shutdown_.shutdown_if_unused();
  if (!kept.empty()) logger_.debug("reservation over, shim still used", {{"reason", kept}});
}

std::string ShimReservations::why_kept() const {
  if (reserved_.empty()) return "";
  return fmt::format("reserved for the Create of {}", fmt::join(keys_of(reserved_), ", "));
}

}  // namespace shim::detail
