// What a live upgrade carries of an output copy (docs/live-upgrade.md): OutputBuffer's
// bytes and StreamCopier's progress, saved by the old program and taken up by the new one.
// The fds themselves stay open across the exec; the new program works on duplicates
// (upgrade/carried_fds.h).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/asio/post.hpp>

#include "stdio/output_buffer.h"
#include "stdio/stream_copier.h"
#include "upgrade/carried_fds.h"
#include "upgrade/state_fields.h"
#include "upgrade/upgrade_support.h"

namespace shim::stdio {

namespace json = boost::json;

namespace {

constexpr std::size_t kChunk = 64 * 1024;  // as OutputBuffer's chunks

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

const char* overflow_name(OutputOverflow overflow) {
  return overflow == OutputOverflow::kDrop ? "drop" : "block";
}

bool parse_overflow(const std::string& name, OutputOverflow* overflow) {
  if (name != "drop" && name != "block") return false;
  *overflow = name == "drop" ? OutputOverflow::kDrop : OutputOverflow::kBlock;
  return true;
}

}  // namespace

// ---- OutputBuffer ----

shim::Status OutputBuffer::save_for_upgrade(json::object* state, std::vector<int>* fds,
                                            std::vector<Fd>* made) const {
  Fd memory;
  if (memory_size_ > 0) {
    memory = Fd(::memfd_create("libshim-output-buffer", MFD_CLOEXEC));
    if (!memory.valid()) {
      return shim::unknown(fmt::format("output buffer: memfd: {}", std::strerror(errno)));
    }
    for (const Chunk& chunk : memory_) {
      if (!write_all(memory.get(), chunk.data.get() + chunk.begin, chunk.end - chunk.begin)) {
        return shim::unknown(fmt::format("output buffer: save: {}", std::strerror(errno)));
      }
    }
    fds->push_back(memory.get());
  }
  if (spill_.valid()) fds->push_back(spill_.get());
  *state = json::object{{"memory_bytes", options_.memory_bytes},
                        {"spill_bytes", options_.spill_bytes},
                        {"spill_dir", options_.spill_dir},
                        {"overflow", overflow_name(options_.overflow)},
                        {"memory_fd", memory.get()},
                        {"memory_size", memory_size_},
                        {"spill_fd", spill_.get()},
                        {"spill_usable", spill_usable_},
                        {"spill_head", spill_head_},
                        {"spill_tail", spill_tail_},
                        {"reserved", reserved_},
                        {"spilled_bytes", spilled_bytes_},
                        {"peak_size", peak_size_},
                        {"spill_error", spill_error_}};
  made->push_back(std::move(memory));
  return {};
}

shim::Status OutputBuffer::restore_after_upgrade(const json::value& saved, const std::string& where,
                                                 std::unique_ptr<OutputBuffer>* out,
                                                 upgrade::CarriedFds* carried) {
  upgrade::StateFields fields(saved, where);
  OutputBufferOptions options;
  options.memory_bytes = fields.count("memory_bytes");
  options.spill_bytes = fields.count("spill_bytes");
  options.spill_dir = fields.text("spill_dir");
  if (!parse_overflow(fields.text("overflow"), &options.overflow))
    fields.fail("overflow", "block or drop");
  const int memory_fd = fields.fd("memory_fd");
  const std::uint64_t memory_size = fields.count("memory_size");
  const int spill_fd = fields.fd("spill_fd");
  auto buffer = std::make_unique<OutputBuffer>(std::move(options));
  buffer->spill_usable_ = fields.flag("spill_usable");
  buffer->spill_head_ = fields.count("spill_head");
  buffer->spill_tail_ = fields.count("spill_tail");
  buffer->reserved_ = fields.count("reserved");
  buffer->spilled_bytes_ = fields.count("spilled_bytes");
  buffer->peak_size_ = fields.count("peak_size");
  buffer->spill_error_ = fields.text("spill_error");
  if (buffer->spill_tail_ < buffer->spill_head_ ||
      buffer->spill_size() > buffer->options_.spill_bytes) {
    fields.fail("spill_tail", "within the spill ring");
  }
  if ((buffer->spill_size() > 0 && spill_fd < 0) || (memory_size > 0 && memory_fd < 0))
    fields.fail(memory_fd < 0 ? "memory_fd" : "spill_fd", "an fd for the bytes held");
  if (!fields.status().ok()) return fields.status();

  if (Status s = carried->take(spill_fd, "spill file", &buffer->spill_); !s.ok()) return s;
  Fd memory;
  if (Status s = carried->take(memory_fd, "output buffer memory", &memory); !s.ok()) return s;
  for (std::uint64_t offset = 0; offset < memory_size;) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(memory_size - offset, kChunk));
    Chunk chunk{std::make_unique<char[]>(kChunk), 0, n};
    ssize_t got = ::pread(memory.get(), chunk.data.get(), n, static_cast<off_t>(offset));
    if (got != static_cast<ssize_t>(n)) {
      return Status(Code::kFailedPrecondition,
                    fmt::format("{}: read {} buffered bytes: {}", where, memory_size,
                                got < 0 ? std::strerror(errno) : "short read"));
    }
    buffer->memory_.push_back(std::move(chunk));
    buffer->memory_size_ += n;
    offset += n;
  }
  *out = std::move(buffer);
  return {};
}

// ---- StreamCopier ----

shim::Status StreamCopier::save_for_upgrade(json::object* state, std::vector<int>* fds,
                                            std::vector<Fd>* made) {
  if (finished_) {
    return shim::Status(Code::kFailedPrecondition, fmt::format("copy {}: already finished", name_));
  }
  json::object saved{
      {"source", source_.native_handle()},
      {"target", target_->get()},
      {"keeper", keeper_.get()},
      {"method", method_ == CopyMethod::kSplice ? "splice" : "read_write"},
      {"bytes", bytes_},
      {"pending", pending_begin_ < pending_end_
                      ? upgrade::hex(std::string_view(buffer_.data() + pending_begin_,
                                                      pending_end_ - pending_begin_))
                      : std::string()},
      {"source_eof", source_eof_},
      {"reader_stalled", reader_stalled_},
      {"dropping", dropping_},
      {"dropped_total", dropped_total_},
      {"dropped_episode", dropped_episode_},
      {"spilled_total", spilled_total_},
      {"overflow", overflow_name(overflow_)}};
  fds->push_back(source_.native_handle());
  fds->push_back(target_->get());
  if (keeper_.valid()) fds->push_back(keeper_.get());
  if (out_) {
    json::object buffer;
    if (shim::Status s = out_->save_for_upgrade(&buffer, fds, made); !s.ok()) {
      return shim::Status(s.code(), fmt::format("copy {}: {}", name_, s.message()));
    }
    saved["buffer"] = std::move(buffer);
  }
  *state = std::move(saved);
  return {};
}

shim::Status StreamCopier::saved_fds(const json::value& saved, const std::string& where,
                                     SavedFds* fds) {
  upgrade::StateFields fields(saved, where);
  fds->source = fields.fd("source");
  fds->target = fields.fd("target");
  fds->keeper = fields.fd("keeper");
  if (fields.status().ok() && (fds->source < 0 || fds->target < 0))
    fields.fail(fds->source < 0 ? "source" : "target", "an open fd");
  return fields.status();
}

shim::Status StreamCopier::resume(boost::asio::any_io_executor executor, std::string name,
                                  const json::value& saved, Fd source, CopyTarget target,
                                  DoneHandler done,
                                  std::function<void(const OverflowEpisode&)> on_overflow,
                                  upgrade::CarriedFds* carried,
                                  std::shared_ptr<StreamCopier>* copier) {
  upgrade::StateFields fields(saved, name);
  const std::string method = fields.text("method");
  std::string pending;
  if (!upgrade::unhex(fields.text("pending"), &pending) || pending.size() > kBufferSize)
    fields.fail("pending", "hex bytes of one read");
  OutputOverflow overflow = OutputOverflow::kBlock;
  if (!parse_overflow(fields.text("overflow"), &overflow)) fields.fail("overflow", "block or drop");
  if (method != "splice" && method != "read_write") fields.fail("method", "splice or read_write");
  auto made = std::make_shared<StreamCopier>(
      executor, name, method == "splice" ? CopyMethod::kSplice : CopyMethod::kReadWrite,
      std::move(done));
  made->bytes_ = fields.count("bytes");
  made->source_eof_ = fields.flag("source_eof");
  made->reader_stalled_ = fields.flag("reader_stalled");
  made->dropping_ = fields.flag("dropping");
  made->dropped_total_ = fields.count("dropped_total");
  made->dropped_episode_ = fields.count("dropped_episode");
  made->spilled_total_ = fields.count("spilled_total");
  const json::value* buffer = fields.object("buffer", true);
  if (!fields.status().ok()) return fields.status();
  if (buffer != nullptr) {
    if (shim::Status s =
            OutputBuffer::restore_after_upgrade(*buffer, name + ".buffer", &made->out_, carried);
        !s.ok()) {
      return s;
    }
    made->overflow_ = overflow;
    made->on_overflow_ = std::move(on_overflow);
  }
  if (shim::Status s = made->attach(std::move(source), std::move(target)); !s.ok()) return s;
  if (!pending.empty()) {
    made->buffer_.resize(kBufferSize);
    std::memcpy(made->buffer_.data(), pending.data(), pending.size());
    made->pending_end_ = pending.size();
  }
  // Nothing is waited on yet in this program: pump() finds out which end is ready.
  boost::asio::post(made->executor_, [made] {
    if (!made->finished_) made->pump();
  });
  *copier = std::move(made);
  return {};
}

}  // namespace shim::stdio
