// The long-lived shim server: one Asio loop for sockets, signals and timers; a small
// pool for blocking runtime calls; the plug-in's TaskService served as task v2 and v3,
// and its SandboxRuntime, if it has one, as containerd's sandbox API on the same socket.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/vendor_call.h"
#include "events/event_forwarder.h"
#include "process/posix_spawner.h"
#include "process/signal_watcher.h"
#include "process/signalfd_reaper.h"
#include "protocol/actions.h"
#include "protocol/shim_sharing.h"
#include "protocol/shutdown_sequence.h"
#include "sandbox/sandbox_service.h"
#include "shim/clock.h"
#include "shim/logger.h"
#include "shim/process/work_pool.h"
#include "socket/unix_listener.h"
#include "ttrpc/server.h"
#include "upgrade/live_upgrade.h"

namespace shim::detail {
namespace {

constexpr int kListenFd = 3;

// containerd created the bundle's `log` FIFO and keeps it open, so this never blocks.
// Our stderr becomes the FIFO; the logger writes there without ever blocking.
void redirect_stderr_to_log_fifo() {
  int fd = ::open("log", O_WRONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;  // run by hand: keep stderr
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
}

Status listen(const ShimFlags& flags, ttrpc::TtrpcServer& server, std::string* socket_path) {
  if (!flags.socket.empty()) {
    *socket_path = flags.socket;
    return server.serve_path(flags.socket);
  }
  if (Status s = socket_path_of(kListenFd, socket_path); !s.ok()) {
    return Status(s.code(),
                  fmt::format("fd {} is not the shim socket: {}", kListenFd, s.message()));
  }
  ::fcntl(kListenFd, F_SETFD, FD_CLOEXEC);
  return server.serve_fd(kListenFd);
}

// A shared shim (`start` set kSharedLingerEnv): it lingers when unused and serves
// Reserve. Its launching `start` reserved nothing, so the shim reserves itself for that
// task's Create, and so ends even if no Create ever comes. After a live upgrade the old
// program's reservations and linger timer are gone: one window for whatever Create was
// promised, after which the shim asks whether it is used. Any other daemon logs why its
// task could not share, if it could not.
std::unique_ptr<ShimReservations> share_shim(boost::asio::any_io_executor executor,
                                             ShutdownSequence& shutdown, Logger& logger,
                                             const ServerOptions& options, bool upgraded,
                                             ttrpc::Router& router) {
  if (const char* why = std::getenv(kSharedFallbackEnv)) {
    logger.warn("shared shim not used, this task has a shim of its own", {{"reason", why}});
    ::unsetenv(kSharedFallbackEnv);
  }
  std::optional<std::chrono::milliseconds> linger = shared_linger_from_env();
  if (!linger) return nullptr;
  shutdown.set_linger(*linger);
  auto reservations = std::make_unique<ShimReservations>(
      executor, shutdown, logger, [&shutdown] { return shutdown.ending(); },
      options.log_to_fifo && options.log_sink == nullptr);
  reservations->register_on(router);
  if (const char* first = std::getenv(kSharedFirstTaskEnv)) {
    if (!upgraded) (void)reservations->reserve(first);
    ::unsetenv(kSharedFirstTaskEnv);  // not for the program a live upgrade execs
  }
  if (upgraded) (void)reservations->reserve("");
  return reservations;
}

void dump_state(Logger& logger, const ttrpc::TtrpcServer& server, const EventForwarder& forwarder,
                const SignalfdReaper* reaper) {
  auto events = forwarder.stats();
  LogFields fields = {{"connections", server.connection_count()},
                      {"calls_in_flight", server.calls_in_flight()},
                      {"events_queued", events.queued},
                      {"events_sent", events.sent},
                      {"events_rejected", events.rejected}};
  if (reaper != nullptr) {
    auto reaped = reaper->stats();
    fields.emplace_back("reaped", reaped.reaped);
    fields.emplace_back("reaped_claimed", reaped.claimed);
  }
  logger.info("state dump", fields);
}

// The daemon's reaper: the plug-in's, or libshim's signalfd subreaper (`ours`, not started
// yet: run_serve starts it once the services exist).
Status make_reaper(Manager& manager, const ServerOptions& options,
                   boost::asio::any_io_executor executor, SignalWatcher& signals,
                   std::unique_ptr<Reaper>* reaper, SignalfdReaper** ours) {
  if (Status s = vendor_call("Manager::create_reaper",
                             [&] {
                               *reaper = manager.create_reaper(executor);
                               return Status();
                             });
      !s.ok()) {
    return s;
  }
  if (*reaper != nullptr) return {};
  auto signalfd = std::make_unique<SignalfdReaper>(
      executor, signals, ReaperOptions{.child_subreaper = options.subreaper});
  *ours = signalfd.get();
  *reaper = std::move(signalfd);
  return {};
}

// The services the daemon serves; they outlive the server.
struct DaemonServices {
  std::unique_ptr<TaskService> task;
  std::unique_ptr<SandboxService> sandbox;  // null: the plug-in runs no pods itself
};

// The plug-in's task service, its sandbox service if it has a SandboxRuntime, and its
// extra services on `router`.
Status make_services(Manager& manager, ServiceContext& context, ttrpc::Router& router,
                     DaemonServices* services) {
  Status made = vendor_call("Manager::create_task_service", [&] {
    services->task = manager.create_task_service(context);
    return services->task != nullptr
               ? Status()
               : Status(Code::kInternal, "Manager::create_task_service made no service");
  });
  if (!made.ok()) return made;
  register_task_service(router, *services->task);
  std::unique_ptr<SandboxRuntime> sandbox_runtime;
  made = vendor_call("Manager::create_sandbox_runtime", [&] {
    sandbox_runtime = manager.create_sandbox_runtime(context);
    return Status();
  });
  if (!made.ok()) return made;
  if (sandbox_runtime != nullptr) {
    services->sandbox = std::make_unique<SandboxService>(context, std::move(sandbox_runtime));
    register_sandbox_service(router, *services->sandbox);
  }
  return vendor_call("Manager::register_services", [&] {
    manager.register_services(router, context);
    return Status();
  });
}

// What a live upgrade needs of the daemon; a service without a participant refuses it.
upgrade::UpgradeSetup upgrade_setup(const ShimFlags& flags, const Manager& manager,
                                    ServiceContext& context, EventForwarder& forwarder,
                                    Reaper& reaper, const SignalfdReaper* ours,
                                    DaemonServices& services) {
  upgrade::UpgradeSetup setup;
  setup.executor = context.executor;
  setup.logger = &context.logger;
  setup.reaper = &reaper;
  setup.spawner = &context.spawner;
  setup.pool = &context.pool;
  setup.forwarder = &forwarder;
  if (ours != nullptr) setup.exits_delivered = [ours] { return ours->fan_out_idle(); };
  setup.argv = flags.argv;
  // The sandbox first: its restore sets up what the rest of the new program relies on
  // (a pod's pool threads go back to the host's namespaces).
  if (services.sandbox) setup.participants.push_back(services.sandbox.get());
  UpgradeParticipant* tasks = nullptr;
  Status asked = vendor_call("TaskService::upgrade_participant", [&] {
    tasks = services.task->upgrade_participant();
    return Status();
  });
  if (tasks != nullptr) {
    setup.participants.push_back(tasks);
  } else {
    setup.refusals.push_back(asked.ok() ? "the task service does not support live upgrade"
                                        : asked.message());
  }
  (void)vendor_call("Manager::version", [&] {
    setup.version = manager.version();
    return Status();
  });
  if (setup.argv.empty()) setup.refusals.push_back("the daemon's command line is unknown");
  return setup;
}

// Runs the loop until it stops. An exception escaping a handler (a plug-in's, or ours)
// is logged and the loop goes on: one failed handler must not end every container's shim.
void run_loop(boost::asio::io_context& loop, Logger& logger) {
  for (;;) {
    try {
      loop.run();
      return;
    } catch (...) {
      Status s = vendor_exception_status("an event loop handler");
      logger.error("exception escaped an event loop handler", {{"error", s.message()}});
    }
  }
}

Logger make_logger(const ShimFlags& flags, const ServerOptions& options, const Clock& clock,
                   const Manager& manager) {
  std::shared_ptr<LogSink> sink = options.log_sink;
  if (sink == nullptr) sink = std::make_shared<FdLogSink>(STDERR_FILENO);
  return Logger(std::move(sink), clock, flags.debug ? LogLevel::kDebug : LogLevel::kInfo,
                {{"namespace", flags.ns}, {"pid", ::getpid()}, {"runtime", manager_name(manager)}});
}

}  // namespace

int run_serve(const ShimFlags& flags, const ShimEnv& env, Manager& manager) {
  if (flags.ns.empty()) {
    return fail(manager, Status(Code::kInvalidArgument, "shim namespace cannot be empty"));
  }
  ServerOptions options;
  Status configured = vendor_call("Manager::server_options", [&] {
    options = manager.server_options();
    return Status();
  });
  // One malloc arena: glibc would give the pool's thread an arena of its own (a 64 MiB
  // reservation, ~8 KiB more private memory per shim) for a few small allocations.
  ::mallopt(M_ARENA_MAX, 1);
  // A fixed threshold: blocks from 128 KiB up (a 4 MiB frame, a big reply) are mmapped
  // and go back to the kernel when freed. glibc's default raises the threshold after such
  // a free, and later big blocks then stay in the heap: a peer sending 4 MiB frames would
  // leave the shim's RSS tens of MiB higher for good.
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  // Before any thread exists: every thread inherits this mask, so these signals reach
  // only the loop's signalfd.
  Status blocked = SignalWatcher::block_in_this_thread({SIGCHLD, SIGTERM, SIGINT, SIGUSR1});
  ::signal(SIGPIPE, SIG_IGN);
  if (options.log_to_fifo) redirect_stderr_to_log_fifo();
  if (!configured.ok()) return fail(manager, configured);

  // Exec'd by a live upgrade (ours, or the old program's again): the state fd.
  std::optional<upgrade::Incoming> incoming = upgrade::take_incoming();
  SystemClock clock;
  Logger logger = make_logger(flags, options, clock, manager);
  if (!blocked.ok()) logger.warn("signal mask", {{"error", blocked.message()}});
  boost::asio::io_context loop(1);
  auto executor = loop.get_executor();
  SignalWatcher signals(executor);
  SignalfdReaper* signalfd_reaper = nullptr;
  std::unique_ptr<Reaper> reaper;
  if (Status s = make_reaper(manager, options, executor, signals, &reaper, &signalfd_reaper);
      !s.ok()) {
    logger.error("serve", {{"error", s.message()}});
    return 1;
  }
  WorkPool pool(options.pool_threads);
  pool.set_exception_handler([&logger](std::exception_ptr error) {
    try {
      std::rethrow_exception(error);
    } catch (...) {
      logger.error("exception escaped work on the pool",
                   {{"error", pool_exception_status().message()}});
    }
  });
  PosixSpawner spawner;
  EventForwarder forwarder(executor, {.ttrpc_address = env.ttrpc_address, .ns = flags.ns}, clock,
                           logger);
  ShutdownSequence shutdown(loop, logger);

  ServiceContext context{executor,
                         *reaper,
                         forwarder,
                         clock,
                         spawner,
                         pool,
                         logger,
                         shutdown,
                         ShimIdentity{flags.ns, flags.id, current_dir(), flags.address,
                                      env.ttrpc_address, flags.debug},
                         options.output_buffer};
  DaemonServices services;
  ttrpc::Router router;
  if (Status s = make_services(manager, context, router, &services); !s.ok()) {
    logger.error("serve", {{"error", s.message()}});
    return 1;
  }
  std::unique_ptr<ShimReservations> reservations =
      share_shim(executor, shutdown, logger, options, incoming.has_value(), router);
  upgrade::LiveUpgrade live_upgrade(
      upgrade_setup(flags, manager, context, forwarder, *reaper, signalfd_reaper, services));
  live_upgrade.register_on(router);
  ttrpc::TtrpcServer server(executor, std::move(router));
  live_upgrade.attach(&server);

  std::string socket_path;
  Status listening = incoming ? live_upgrade.restore(*incoming, &socket_path)
                              : listen(flags, server, &socket_path);
  if (!listening.ok()) {
    logger.error("serve", {{"error", listening.message()}});
    return 1;
  }
  // Only now: start() reaps what already exited, and after a live upgrade those exits
  // belong to the processes just restored, which the services must know first.
  if (signalfd_reaper != nullptr) {
    if (Status s = signalfd_reaper->start(); !s.ok())
      logger.warn("reaper setup", {{"error", s.message()}});
  }
  shutdown.attach(&server, &forwarder, socket_path);
  auto watch = [&](int signo, SignalWatcher::Handler handler) {
    if (Status s = signals.watch(signo, std::move(handler)); !s.ok()) {
      logger.warn("signal handler", {{"signal", signo}, {"error", s.message()}});
    }
  };
  watch(SIGTERM, [&](const SignalInfo&) { shutdown.request_shutdown(); });
  watch(SIGINT, [&](const SignalInfo&) { shutdown.request_shutdown(); });
  watch(SIGUSR1,
        [&](const SignalInfo&) { dump_state(logger, server, forwarder, signalfd_reaper); });

  logger.info("starting signal loop", {{"path", current_dir()}, {"socket", socket_path}});
  // On the main thread: a pod without a pause container (shim/linux/pod_sandbox.h) puts
  // this thread into the pod's namespaces, which /proc/<pid>/ns shows for it alone.
  run_loop(loop, logger);

  pool.stop();
  forwarder.close();
  if (signalfd_reaper != nullptr) signalfd_reaper->stop();
  signals.close();
  logger.info("shim exited");
  return 0;
}

}  // namespace shim::detail
