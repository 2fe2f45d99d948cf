// shim-wasm/src/stderr_relay.h: the zygote's stderr lines reach the shim's logger as its
// own lines ("<message>\t<key>=<value>..." as a message and fields, other lines whole),
// a line cut across reads is put together, and one left unended is logged at EOF.
#include <unistd.h>

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

TEST_CASE("log_relayed_line: message and fields, or the line whole", "[wasm][stderr-relay]") {
  Captured captured;
  shim::SystemClock clock;
  shim::Logger logger(captured.sink(), clock);
  shim_wasm::log_relayed_line(logger, "wasm zygote: module made ready\tmodule=/a b.wasm\tbytes=7");
  shim_wasm::log_relayed_line(logger, "[error] the engine's own line");
  shim_wasm::log_relayed_line(logger, "");
  REQUIRE(captured.lines.size() == 2);
  CHECK(captured.lines[0].find(
            "level=info msg=\"wasm zygote: module made ready\" bytes=7 module=\"/a b.wasm\"\n") !=
        std::string::npos);
  CHECK(captured.lines[1].find("msg=\"wasm zygote\" said=\"[error] the engine's own line\"") !=
        std::string::npos);
}

TEST_CASE("start_stderr_relay: lines across writes, the last one at EOF", "[wasm][stderr-relay]") {
  Captured captured;
  shim::SystemClock clock;
  shim::Logger logger(captured.sink(), clock);
  boost::asio::io_context loop;
  shim::UniqueFd write_end;
  REQUIRE(shim_wasm::start_stderr_relay(loop.get_executor(), logger, &write_end).ok());
  const std::string text = "first\tk=v\nsec";
  REQUIRE(::write(write_end.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  loop.run_for(std::chrono::milliseconds(50));
  CHECK(captured.lines.size() == 1);  // "sec" waits for its end
  REQUIRE(::write(write_end.get(), "ond\nlast", 8) == 8);
  write_end.reset();  // EOF: the helper is gone
  loop.run();         // ends when the relay does
  REQUIRE(captured.lines.size() == 3);
  CHECK(captured.lines[0].find("msg=first k=v") != std::string::npos);
  CHECK(captured.lines[1].find("said=second") != std::string::npos);
  CHECK(captured.lines[2].find("said=last") != std::string::npos);
}

}  // namespace
