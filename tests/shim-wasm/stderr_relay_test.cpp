// shim-wasm/src/stderr_relay.h: the zygote's lines reach the shim's logger as its own
// (structured ones as a message and fields; its stderr's, and anything not key=value,
// only as a `said` field), a line cut across reads is put together, one past 4 KiB is
// cut there, and one left unended is logged at EOF.
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "shim/clock.h"
#include "shim/logger.h"
#include "stderr_relay.h"

namespace {

struct Captured {
  std::vector<std::string> lines;
  std::shared_ptr<shim::LogSink> sink() {
    return std::make_shared<shim::CallbackLogSink>(
        [this](std::string_view line) { lines.emplace_back(line); });
  }
};

TEST_CASE("log_relayed_line: message and fields, or the line as said", "[wasm][stderr-relay]") {
  using shim_wasm::RelayedLines;
  Captured captured;
  shim::SystemClock clock;
  shim::Logger logger(captured.sink(), clock);
  shim_wasm::log_relayed_line(logger, RelayedLines::kStructured,
                              "wasm zygote: module made ready\tmodule=/a b.wasm\tbytes=7");
  // Not all key=value: whole. On the stderr pipe, never parsed (a module's import names
  // in the engine's lines could otherwise forge fields).
  shim_wasm::log_relayed_line(logger, RelayedLines::kStructured, "odd\tno equals sign");
  shim_wasm::log_relayed_line(logger, RelayedLines::kSaid, "[error] import\tid=forged");
  shim_wasm::log_relayed_line(logger, RelayedLines::kSaid, "");
  REQUIRE(captured.lines.size() == 3);
  CHECK(captured.lines[0].find(
            "level=info msg=\"wasm zygote: module made ready\" bytes=7 module=\"/a b.wasm\"\n") !=
        std::string::npos);
  CHECK(captured.lines[1].find("level=warning msg=\"wasm zygote\" said=\"odd\\tno equals sign\"") !=
        std::string::npos);
  CHECK(captured.lines[2].find("msg=\"wasm zygote\" said=\"[error] import\\tid=forged\"\n") !=
        std::string::npos);
  CHECK(captured.lines[2].find(" id=") == std::string::npos);
}

// Runs `loop` until `lines` has `count` lines, 5 s at most.
void run_until(boost::asio::io_context& loop, const std::vector<std::string>& lines,
               std::size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (lines.size() < count && std::chrono::steady_clock::now() < deadline) {
    loop.run_one_for(std::chrono::milliseconds(100));
  }
}

TEST_CASE("start_stderr_relay: lines across writes, cut at 4 KiB, the last one at EOF",
          "[wasm][stderr-relay]") {
  Captured captured;
  shim::SystemClock clock;
  shim::Logger logger(captured.sink(), clock);
  boost::asio::io_context loop;
  shim::UniqueFd write_end;
  REQUIRE(shim_wasm::start_stderr_relay(loop.get_executor(), logger,
                                        shim_wasm::RelayedLines::kStructured, &write_end)
              .ok());
  const std::string text = "first\tk=v\nsec";
  REQUIRE(::write(write_end.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  run_until(loop, captured.lines, 1);
  loop.run_for(std::chrono::milliseconds(20));
  CHECK(captured.lines.size() == 1);  // "sec" waits for its end
  REQUIRE(::write(write_end.get(), "ond\n", 4) == 4);
  // Its pieces are only said, even where a piece looks like a structured line.
  const std::string long_line = std::string(4096, 'x') + "forged\tid=x\nlast";
  REQUIRE(::write(write_end.get(), long_line.data(), long_line.size()) ==
          static_cast<ssize_t>(long_line.size()));
  write_end.reset();  // EOF: the helper is gone
  loop.run();         // ends when the relay does
  REQUIRE(captured.lines.size() == 5);
  CHECK(captured.lines[0].find("msg=first k=v") != std::string::npos);
  CHECK(captured.lines[1].find("said=second") != std::string::npos);
  CHECK(captured.lines[2].find("said=" + std::string(4096, 'x') + "\n") != std::string::npos);
  CHECK(captured.lines[3].find("msg=\"wasm zygote\" said=\"forged\\tid=x\"\n") !=
        std::string::npos);
  CHECK(captured.lines[4].find("said=last") != std::string::npos);
}

}  // namespace
