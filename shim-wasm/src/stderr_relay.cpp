#include "stderr_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

namespace shim_wasm {
namespace {

constexpr std::size_t kMaxLine = 4096;

// Owns itself through the pending read; gone at EOF or an error.
class Relay : public std::enable_shared_from_this<Relay> {
 public:
  Relay(const boost::asio::any_io_executor& executor, const shim::Logger& logger, RelayedLines form,
        int read_end)
      : pipe_(executor, read_end), logger_(logger), form_(form) {}

  void read() {
    pipe_.async_read_some(
        boost::asio::buffer(buffer_),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          if (ec) {  // EOF: the helper is gone; what it left unended
            if (!self->line_.empty())
              log_relayed_line(self->logger_, self->cut_ ? RelayedLines::kSaid : self->form_,
                               self->line_);
            return;
          }
          self->take(n);
          self->read();
        });
  }

 private:
  // A line cut at kMaxLine is logged in pieces, each only as said: a piece of a long
  // value must not pass for a structured line of its own.
  void take(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      char c = buffer_[i];
      if (c == '\n' || line_.size() == kMaxLine) {
        const bool cut = c != '\n';
        log_relayed_line(logger_, cut || cut_ ? RelayedLines::kSaid : form_, line_);
        line_.clear();
        cut_ = cut;
        if (!cut) continue;
      }
      line_.push_back(c);
    }
  }

  boost::asio::posix::stream_descriptor pipe_;
  const shim::Logger& logger_;
  RelayedLines form_;
  std::array<char, 4096> buffer_{};
  std::string line_;  // the unended line so far
  bool cut_ = false;  // line_ continues a line cut at kMaxLine
};

}  // namespace

void log_relayed_line(const shim::Logger& logger, RelayedLines form, std::string_view line) {
  if (line.empty()) return;
  const std::size_t tab = line.find('\t');
  shim::LogFields fields;
  bool structured = form == RelayedLines::kStructured && tab != std::string_view::npos && tab > 0;
  for (std::string_view rest = structured ? line.substr(tab + 1) : std::string_view();
       structured && !rest.empty();) {
    const std::size_t next = rest.find('\t');
    const std::string_view field = rest.substr(0, next);
    const std::size_t eq = field.find('=');
    if (eq == std::string_view::npos || eq == 0) structured = false;  // not ours: whole
    if (structured)
      fields.push_back({std::string(field.substr(0, eq)), std::string(field.substr(eq + 1))});
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
  }
  if (structured) {
    logger.info(line.substr(0, tab), fields);
  } else {
    logger.warn("wasm zygote", {{"said", std::string(line)}});
  }
}

shim::Status start_stderr_relay(const boost::asio::any_io_executor& executor,
                                const shim::Logger& logger, RelayedLines form,
                                shim::UniqueFd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return shim::Status(
        shim::Code::kUnknown,
        fmt::format("wasm: a pipe for the zygote's stderr: {}", std::strerror(errno)));
  }
  *write_end = shim::UniqueFd(fds[1]);
  auto relay = std::make_shared<Relay>(executor, logger, form, fds[0]);
  // Started on the loop, where every later read is started too.
  boost::asio::post(executor, [relay] { relay->read(); });
  return {};
}

}  // namespace shim_wasm
