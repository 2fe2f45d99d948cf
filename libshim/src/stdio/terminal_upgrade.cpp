// What a live upgrade carries of a terminal (docs/live-upgrade.md, "Carrying stdio"): the
// pty master and the console copy through it (ConsoleCopier: stdin FIFO -> master ->
// stdout), the bytes each direction has in hand, and an output FIFO still being opened.
// The fds stay open across the exec; the new program works on duplicates
// (upgrade/carried_fds.h).
#include <cstring>

#include <fmt/format.h>
#include <boost/asio/post.hpp>

#include "stdio/console_copier.h"
#include "stdio/terminal_io.h"
#include "upgrade/carried_fds.h"
#include "upgrade/state_fields.h"
#include "upgrade/upgrade_support.h"

namespace shim {

namespace json = boost::json;
using stdio::Fd;

namespace stdio {

// A leg is idle (never started), running, or ended (its handler ran: the no-op marker).
json::object ConsoleCopier::save_leg(const Leg& leg) {
  const char* state = leg.active ? "running" : leg.done ? "ended" : "idle";
  return {{"state", state},
          {"bytes", leg.bytes},
          {"pending", leg.begin < leg.end ? upgrade::hex(std::string_view(
                                                leg.buffer.data() + leg.begin, leg.end - leg.begin))
                                          : std::string()},
          {"end_when_idle", leg.end_when_idle}};
}

shim::Status ConsoleCopier::save_for_upgrade(json::object* state, std::vector<int>* fds) {
  if (cancelled_) return shim::Status(Code::kFailedPrecondition, "console copy: cancelled");
  const int master = master_.is_open() ? master_.native_handle() : -1;
  const int input = input_.active ? input_source_.native_handle() : -1;
  const int target = output_.active && output_target_ ? output_target_->get() : -1;
  const int keeper = output_.active ? output_keeper_.get() : -1;
  for (int fd : {master, input, target, keeper}) {
    if (fd >= 0) fds->push_back(fd);
  }
  *state = json::object{{"master", master},
                        {"input", input},
                        {"output_target", target},
                        {"output_keeper", keeper},
                        {"close_master_after_output", close_master_after_output_},
                        {"input_leg", save_leg(input_)},
                        {"output_leg", save_leg(output_)}};
  return {};
}

shim::Status ConsoleCopier::resume_leg(const json::value& saved, const char* where, Leg* leg,
                                       bool* running) {
  upgrade::StateFields fields(saved, where);
  const std::string state = fields.text("state");
  leg->bytes = fields.count("bytes");
  leg->end_when_idle = fields.flag("end_when_idle");
  std::string pending;
  if (!upgrade::unhex(fields.text("pending"), &pending) || pending.size() > kBufferSize)
    fields.fail("pending", "hex bytes of one read");
  if (state != "idle" && state != "running" && state != "ended")
    fields.fail("state", "idle, running or ended");
  if (!fields.status().ok()) return fields.status();
  *running = state == "running";
  if (state == "ended") leg->done = [](const CopyResult&) {};
  if (!pending.empty()) {
    leg->buffer.resize(kBufferSize);
    std::memcpy(leg->buffer.data(), pending.data(), pending.size());
    leg->begin = 0;
    leg->end = pending.size();
  }
  return {};
}

shim::Status ConsoleCopier::resume(boost::asio::any_io_executor executor, const json::value& saved,
                                   upgrade::CarriedFds* carried, DoneHandler input_done,
                                   DoneHandler output_done,
                                   std::shared_ptr<ConsoleCopier>* copier) {
  upgrade::StateFields fields(saved, "stdio.terminal.copy");
  const int master = fields.fd("master");
  const int input = fields.fd("input");
  const int target = fields.fd("output_target");
  const int keeper = fields.fd("output_keeper");
  const bool close_after = fields.flag("close_master_after_output");
  const json::value* input_leg = fields.object("input_leg");
  const json::value* output_leg = fields.object("output_leg");
  if (!fields.status().ok()) return fields.status();
  auto made = std::make_shared<ConsoleCopier>(executor);
  bool input_running = false, output_running = false;
  if (Status s = resume_leg(*input_leg, "stdio.terminal.input", &made->input_, &input_running);
      !s.ok()) {
    return s;
  }
  if (Status s = resume_leg(*output_leg, "stdio.terminal.output", &made->output_, &output_running);
      !s.ok()) {
    return s;
  }
  made->close_master_after_output_ = close_after;
  boost::system::error_code ec;
  Fd fd;
  if (Status s = carried->take(master, "console master", &fd); !s.ok()) return s;
  if (fd.valid()) {
    made->master_.assign(fd.get(), ec);
    if (ec) return shim::unknown(fmt::format("register console master: {}", ec.message()));
    fd.release();
  }
  if (input_running) {
    if (Status s = carried->take(input, "console stdin", &fd); !s.ok()) return s;
    made->input_source_.assign(fd.get(), ec);
    if (ec) return shim::unknown(fmt::format("register stdin: {}", ec.message()));
    fd.release();
    made->input_.source = &made->input_source_;
    made->input_.target_waiter = &made->master_;
    made->input_.target_fd = made->master_.native_handle();
    made->input_.active = true;
    made->input_.done = std::move(input_done);
  }
  if (output_running) {
    Fd target_fd, keeper_fd;
    if (Status s = carried->take(target, "console output", &target_fd); !s.ok()) return s;
    if (Status s = carried->take(keeper, "console output keeper", &keeper_fd); !s.ok()) return s;
    made->attach_output(std::make_shared<Fd>(std::move(target_fd)), std::move(keeper_fd));
    made->output_.active = true;
    made->output_.done = std::move(output_done);
  }
  // Nothing is waited on yet in this program: each running leg finds out by itself.
  for (Leg* leg : {&made->input_, &made->output_}) {
    if (!leg->active) continue;
    boost::asio::post(executor, [made, leg] { made->pump(*leg); });
  }
  *copier = std::move(made);
  return {};
}

}  // namespace stdio

shim::Status TerminalIO::upgrade_ready() {
  std::lock_guard lock(mu_);
  if (socket_ || master_.valid() || !copier_) {
    return shim::Status(Code::kFailedPrecondition,
                        "its terminal has not started yet (the runtime has not sent its console)");
  }
  return {};
}

shim::Status TerminalIO::save_for_upgrade(json::object* state, std::vector<int>* fds) {
  if (Status s = upgrade_ready(); !s.ok()) return s;
  json::object copy;
  if (Status s = copier_->save_for_upgrade(&copy, fds); !s.ok()) return s;
  const int opener = opener_ ? opener_->path_fd() : -1;
  if (opener >= 0) fds->push_back(opener);
  *state = json::object{{"exited", exited_},
                        {"output_done_pending", static_cast<bool>(output_done_)},
                        {"opener", opener},
                        {"copy", std::move(copy)}};
  return {};
}

shim::Status TerminalIO::restore(boost::asio::any_io_executor executor, StdioSpec spec,
                                 const shim::Logger& logger, const json::value& saved,
                                 upgrade::CarriedFds* carried, OutputDone output_done,
                                 std::shared_ptr<TerminalIO>* terminal) {
  upgrade::StateFields fields(saved, "stdio.terminal");
  const bool exited = fields.flag("exited");
  const bool output_pending = fields.flag("output_done_pending");
  const int opener = fields.fd("opener");
  const json::value* copy = fields.object("copy");
  if (!fields.status().ok()) return fields.status();
  auto made = std::make_shared<TerminalIO>(executor, std::move(spec), logger, nullptr);
  made->exited_ = exited;
  if (output_pending) made->output_done_ = std::move(output_done);
  if (Status s = stdio::ConsoleCopier::resume(executor, *copy, carried, made->input_done_handler(),
                                              made->output_done_handler(), &made->copier_);
      !s.ok()) {
    return s;
  }
  if (opener >= 0) {
    Fd path;
    if (Status s = carried->take(opener, "output FIFO", &path); !s.ok()) return s;
    made->start_fifo_opener(std::move(path));
  }
  // An exit seen before the upgrade: its grace for the last bytes starts again.
  if (exited) made->copier_->drain();
  *terminal = std::move(made);
  return {};
}

}  // namespace shim
