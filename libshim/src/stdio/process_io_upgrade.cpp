// What a live upgrade carries of a process's stdio (docs/live-upgrade.md, "Carrying
// stdio"): the copies between the process's pipes and the client's FIFOs or file, with
// the bytes in hand and buffered, the FIFO openers still waiting for a reader, the stdin
// keeper and the delivery probes, a terminal's console copy (stdio/terminal_upgrade.cpp).
// Every fd stays open across the exec; the new program takes duplicates and closes the
// originals once the loop runs, i.e. once the upgrade is committed
// (upgrade/carried_fds.h). A binary:// logger keeps running: stdio/binary_logger_upgrade.cpp.
#include <fmt/format.h>
#include <boost/asio/post.hpp>

#include "stdio/process_io_impl.h"
#include "upgrade/carried_fds.h"
#include "upgrade/state_fields.h"

namespace shim {

namespace json = boost::json;
using stdio::CopyTarget;
using stdio::Fd;
using stdio::StreamCopier;

namespace {

constexpr std::array<const char*, 3> kNames = {"stdin", "stdout", "stderr"};
constexpr std::array<StdioStream, 3> kStreams = {StdioStream::kStdin, StdioStream::kStdout,
                                                 StdioStream::kStderr};

json::array fd_array(const std::array<int, 3>& fds, std::vector<int>* kept) {
  json::array saved;
  for (int fd : fds) {
    saved.push_back(fd);
    if (fd >= 0) kept->push_back(fd);
  }
  return saved;
}

// Three fd numbers (or -1) from `key` of `fields`.
std::array<int, 3> saved_fd_array(upgrade::StateFields& fields, std::string_view key) {
  std::array<int, 3> fds = {-1, -1, -1};
  const json::array* saved = fields.array(key);
  if (saved == nullptr) return fds;
  if (saved->size() != 3) {
    fields.fail(key, "three fds");
    return fds;
  }
  for (std::size_t i = 0; i < 3; ++i) {
    const json::value& fd = (*saved)[i];
    if (fd.is_int64() && fd.as_int64() >= -1 && fd.as_int64() <= INT32_MAX) {
      fds[i] = static_cast<int>(fd.as_int64());
    } else {
      fields.fail(key, "three fds");
    }
  }
  return fds;
}

}  // namespace

shim::Status ProcessIO::Impl::upgrade_ready() const {
  if (binary_logger_) {
    if (shim::Status s = binary_logger_->upgrade_ready(); !s.ok()) return s;
  }
  if (terminal_ && !closed_) return terminal_->upgrade_ready();
  return {};
}

shim::Status ProcessIO::Impl::save_for_upgrade(json::object* state, std::vector<int>* fds) {
  if (shim::Status s = upgrade_ready(); !s.ok()) return s;
  upgrade_made_.clear();
  std::array<int, 3> runtime_ends{}, shim_ends{}, openers{}, probes{};
  json::array copiers;
  for (std::size_t i = 0; i < 3; ++i) {
    runtime_ends[i] = runtime_end(kStreams[i]);  // an exec not started yet still has them
    shim_ends[i] = shim_ends_[i].get();
    openers[i] = openers_[i] ? openers_[i]->path_fd() : -1;
    probes[i] = delivery_probes_[i].get();
    json::object copier;
    if (copiers_[i] && !copiers_[i]->finished()) {
      if (shim::Status s = copiers_[i]->save_for_upgrade(&copier, fds, &upgrade_made_); !s.ok())
        return s;
      copiers.push_back(std::move(copier));
    } else {
      copiers.push_back(nullptr);
    }
  }
  json::value terminal;  // null: none, or no longer of use (closed)
  if (terminal_ && started_ && !closed_) {
    if (shim::Status s = terminal_->save_for_upgrade(&terminal.emplace_object(), fds); !s.ok())
      return s;
  }
  json::value binary_logger;  // null: none
  if (binary_logger_) {
    if (shim::Status s = binary_logger_->save_for_upgrade(&binary_logger.emplace_object(), fds);
        !s.ok())
      return s;
  }
  if (shared_file_ && shared_file_->valid()) fds->push_back(shared_file_->get());
  if (stdin_keeper_.valid()) fds->push_back(stdin_keeper_.get());
  *state = json::object{{"null", null_},
                        {"started", started_},
                        {"closed", closed_},
                        {"outputs_running", outputs_running_},
                        {"stdin_keeper", stdin_keeper_.get()},
                        {"shared_file", shared_file_ ? shared_file_->get() : -1},
                        {"shared_file_path", shared_file_path_},
                        {"runtime_ends", fd_array(runtime_ends, fds)},
                        {"shim_ends", fd_array(shim_ends, fds)},
                        {"openers", fd_array(openers, fds)},
                        {"probes", fd_array(probes, fds)},
                        {"copiers", std::move(copiers)},
                        {"terminal", std::move(terminal)},
                        {"binary_logger", std::move(binary_logger)}};
  return {};
}

shim::Status ProcessIO::Impl::restore(const json::value& saved, upgrade::CarriedFds* carried) {
  upgrade::StateFields fields(saved, "stdio");
  null_ = fields.flag("null");
  started_ = fields.flag("started");
  closed_ = fields.flag("closed");
  outputs_running_ = static_cast<int>(fields.count("outputs_running"));
  const int stdin_keeper = fields.fd("stdin_keeper");
  const int shared_file = fields.fd("shared_file");
  shared_file_path_ = fields.text("shared_file_path");
  const std::array<int, 3> runtime_ends = saved_fd_array(fields, "runtime_ends");
  const std::array<int, 3> shim_ends = saved_fd_array(fields, "shim_ends");
  const std::array<int, 3> openers = saved_fd_array(fields, "openers");
  const std::array<int, 3> probes = saved_fd_array(fields, "probes");
  const json::array* copiers = fields.array("copiers");
  if (copiers != nullptr && copiers->size() != 3) fields.fail("copiers", "three copies");
  const json::value* terminal =
      saved.is_object() ? saved.as_object().if_contains("terminal") : nullptr;
  if (spec_.terminal && started_ && !closed_ && (terminal == nullptr || !terminal->is_object()))
    fields.fail("terminal", "an object");
  if (outputs_running_ > 2) fields.fail("outputs_running", "at most 2");
  if (!fields.status().ok()) return fields.status();

  if (Status s = carried->take(stdin_keeper, "stdin keeper", &stdin_keeper_); !s.ok()) return s;
  if (Status s = restore_binary_logger(saved, carried); !s.ok()) return s;
  if (spec_.terminal && started_ && !closed_) {
    if (Status s = TerminalIO::restore(executor_, spec_, logger_, *terminal, carried,
                                       output_done_handler(StdioStream::kStdout), &terminal_);
        !s.ok()) {
      return s;
    }
  }
  std::map<int, std::shared_ptr<Fd>> targets;  // a file shared by stdout and stderr: one Fd
  if (shared_file >= 0) {
    Fd file;
    if (Status s = carried->take(shared_file, "output file", &file); !s.ok()) return s;
    shared_file_ = std::make_shared<Fd>(std::move(file));
    targets[shared_file] = shared_file_;
  }
  for (std::size_t i = 0; i < 3; ++i) {
    {
      std::lock_guard lock(runtime_mu_);
      if (Status s = carried->take(runtime_ends[i], kNames[i], &runtime_ends_[i]); !s.ok())
        return s;
    }
    if (Status s = carried->take(shim_ends[i], kNames[i], &shim_ends_[i]); !s.ok()) return s;
    if (Status s = carried->take(probes[i], "delivery probe", &delivery_probes_[i]); !s.ok())
      return s;
    if (!(*copiers)[i].is_null()) {
      if (Status s = restore_copy(kStreams[i], (*copiers)[i], carried, &targets); !s.ok()) return s;
    }
    if (openers[i] >= 0) {
      Fd path;
      if (Status s = carried->take(openers[i], "output FIFO", &path); !s.ok()) return s;
      start_fifo_opener(kStreams[i], std::move(path));
    }
  }
  return {};
}

// The logger comes first: a terminal's console copy writes into its pipe.
shim::Status ProcessIO::Impl::restore_binary_logger(const json::value& saved,
                                                    upgrade::CarriedFds* carried) {
  const json::value* logger = saved.as_object().if_contains("binary_logger");
  if (logger == nullptr || logger->is_null()) return {};
  StdioUri uri;
  if (Status s = parse_stdio_uri(spec_.stdout, &uri); !s.ok()) return s;
  if (uri.scheme != "binary" && uri.scheme != "binary-v2") {
    return Status(Code::kFailedPrecondition,
                  fmt::format("upgrade state: stdio.binary_logger for stdout {}", spec_.stdout));
  }
  return BinaryLogger::restore(executor_, uri, options_.binary_logger, logger_, *logger, carried,
                               &binary_logger_);
}

shim::Status ProcessIO::Impl::restore_copy(StdioStream stream, const json::value& saved,
                                           upgrade::CarriedFds* carried,
                                           std::map<int, std::shared_ptr<Fd>>* targets) {
  const std::size_t i = stream_index(stream);
  StreamCopier::SavedFds numbers;
  if (Status s = StreamCopier::saved_fds(saved, fmt::format("stdio.{}", kNames[i]), &numbers);
      !s.ok()) {
    return s;
  }
  Fd source;
  CopyTarget target;
  if (Status s = carried->take(numbers.source, kNames[i], &source); !s.ok()) return s;
  if (Status s = carried->take(numbers.keeper, "FIFO keeper", &target.keeper); !s.ok()) return s;
  std::shared_ptr<Fd>& shared = (*targets)[numbers.target];
  if (!shared) {
    Fd fd;
    if (Status s = carried->take(numbers.target, "copy target", &fd); !s.ok()) return s;
    shared = std::make_shared<Fd>(std::move(fd));
  }
  target.fd = shared;
  const bool input = stream == StdioStream::kStdin;
  return StreamCopier::resume(executor_, kNames[i], saved, std::move(source), std::move(target),
                              input ? stdin_done_handler() : output_done_handler(stream),
                              input ? nullptr : overflow_handler(stream), carried, &copiers_[i]);
}

// ---- ProcessIO ----

shim::Status ProcessIO::upgrade_ready() const { return impl_->upgrade_ready(); }

shim::Status ProcessIO::save_for_upgrade(json::object* state, std::vector<int>* fds) {
  return impl_->save_for_upgrade(state, fds);
}

void ProcessIO::upgrade_aborted() { impl_->upgrade_aborted(); }

shim::Status ProcessIO::restore(boost::asio::any_io_executor executor, const StdioSpec& spec,
                                const json::value& saved, const shim::Logger& logger,
                                std::unique_ptr<ProcessIO>* io, const ProcessIOOptions& options) {
  auto impl = std::make_shared<Impl>(executor, spec, logger, options);
  auto carried = std::make_shared<upgrade::CarriedFds>();
  if (shim::Status s = impl->restore(saved, carried.get()); !s.ok()) return s;
  // The loop runs only once the upgrade is committed: no going back from there.
  boost::asio::post(executor, [carried] { carried->close_originals(); });
  io->reset(new ProcessIO(std::move(impl)));
  return {};
}

}  // namespace shim
