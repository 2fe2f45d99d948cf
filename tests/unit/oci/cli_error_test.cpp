// runc failures -> the Go shim's error texts: log.json's last error line, the fallbacks,
// and the kill error mapping (containerd pkg/process/utils.go checkKillError).
#include <cerrno>
#include <string>

#include <catch2/catch.hpp>

#include "gocompat/go_compat.h"
#include "shim/oci/cli_error.h"
#include "support/temp_dir.h"

namespace {

using shim::Code;

std::string last_error(std::string_view content) {
  std::string message = "unset";
  shim::Status status = shim::oci::last_runtime_error_in(content, &message);
  INFO(status.to_string());
  REQUIRE(status.ok());
  return message;
}

shim::Status last_error_status(std::string_view content) {
  std::string message;
  return shim::oci::last_runtime_error_in(content, &message);
}

constexpr std::string_view kRuncFailure = "runc did not terminate successfully: exit status 1: ";

}  // namespace

TEST_CASE("log.json: the msg of the last error line", "[runc]") {
  // What runc 1.1 writes for a create whose process does not exist.
  CHECK(last_error(
            R"({"level":"warning","msg":"cgroup v1 is deprecated","time":"2024-05-01T10:00:00Z"})"
            "\n"
            R"({"level":"error","msg":"runc create failed: unable to start container process: exec: \"nope\": executable file not found in $PATH","time":"2024-05-01T10:00:00.123456789Z"})"
            "\n") ==
        "runc create failed: unable to start container process: exec: \"nope\": executable "
        "file not found in $PATH");
  // warn, then error, then info: the error still wins.
  CHECK(last_error("{\"level\":\"warning\",\"msg\":\"w\"}\n{\"level\":\"error\",\"msg\":\"the "
                   "error\"}\n{\"level\":\"info\",\"msg\":\"later info\"}\n") == "the error");
  // Several errors, from earlier commands too (log.json only grows): the last one.
  CHECK(last_error("{\"level\":\"error\",\"msg\":\"old\"}\n{\"level\":\"error\",\"msg\":\"new\"}") ==
        "new");
  CHECK(last_error("{\"level\":\"error\",\"msg\":\"  padded \\n\"}") == "padded");
  CHECK(last_error("") == "");
  CHECK(last_error("\n\n  \n") == "");
  CHECK(last_error("{\"level\":\"info\",\"msg\":\"fine\"}") == "");
}

TEST_CASE("log.json is decoded like Go's json.Decoder into one reused struct", "[runc]") {
  // Keys match case-insensitively; unknown keys are ignored.
  CHECK(last_error("{\"Level\":\"error\",\"MSG\":\"upper\",\"extra\":[1,{}]}") == "upper");
  // A field missing from an entry keeps the previous entry's value.
  CHECK(last_error("{\"level\":\"error\",\"msg\":\"first\"}\n{\"msg\":\"second\"}") == "second");
  CHECK(last_error("{\"level\":\"error\",\"msg\":\"kept\"}\n{\"level\":\"info\"}") == "kept");
  // Values need no newline between them; null is skipped.
  CHECK(last_error("{\"level\":\"error\",\"msg\":\"a\"}{\"msg\":\"b\"} null") == "b");
  CHECK(last_error("{\"level\":\"error\",\"msg\":null}") == "");
}

TEST_CASE("log.json that cannot be decoded is an error", "[runc]") {
  shim::Status garbage = last_error_status("{\"level\":\"error\",\"msg\":\"x\"}\ngarbage\n");
  CHECK(garbage.message() == "invalid character 'g' looking for beginning of value");
  CHECK(last_error_status("{\"level\":\"err").message() == "unexpected EOF");
  CHECK(last_error_status("\"just a string\"").message() ==
        "json: cannot unmarshal string into Go value of type struct { Level string; Msg string; "
        "Time time.Time }");
  CHECK(last_error_status("{\"level\":5,\"msg\":\"x\"}").message() ==
        "json: cannot unmarshal number into Go struct field .Level of type string");
  CHECK(last_error_status("{\"level\":\"error\",\"time\":12}").message() ==
        "Time.UnmarshalJSON: input is not a JSON string");
  CHECK_FALSE(last_error_status("{\"level\":\"error\",}").ok());
}

TEST_CASE("runtime_error: last error, no error line, unreadable log", "[runc]") {
  shim::test::TempDir dir("runc-err-");
  std::string log = dir.sub("log.json");

  SECTION("missing log.json") {
    shim::Status status = shim::oci::runtime_error(log, shim::oci::kStartFailed, kRuncFailure);
    CHECK(status.code() == Code::kUnknown);
    CHECK(status.message() == "OCI runtime start failed: unable to retrieve OCI runtime error "
                              "(open " + log + ": no such file or directory): " +
                                  std::string(kRuncFailure));
  }
  SECTION("garbage in log.json") {
    REQUIRE(shim::go_write_file(log, "oops\n", 0600).ok());
    shim::Status status = shim::oci::runtime_error(log, shim::oci::kExecFailed, "exit status 1");
    CHECK(status.message() == "OCI runtime exec failed: unable to retrieve OCI runtime error "
                              "(invalid character 'o' looking for beginning of value): exit "
                              "status 1");
  }
  SECTION("no error line") {
    REQUIRE(shim::go_write_file(log, "{\"level\":\"info\",\"msg\":\"hi\"}\n", 0600).ok());
    shim::Status status = shim::oci::runtime_error(log, shim::oci::kPauseFailed, kRuncFailure);
    CHECK(status.code() == Code::kUnknown);
    CHECK(status.message() == "OCI runtime pause failed: " + std::string(kRuncFailure));
  }
  SECTION("error line") {
    REQUIRE(shim::go_write_file(
                log,
                "{\"level\":\"error\",\"msg\":\"runc create failed: unable to start container "
                "process: exec: \\\"nope\\\": executable file not found in $PATH\"}\n",
                0600)
                .ok());
    shim::Status status = shim::oci::runtime_error(log, shim::oci::kCreateFailed, kRuncFailure);
    CHECK(status.code() == Code::kUnknown);
    CHECK(status.message() ==
          "OCI runtime create failed: runc create failed: unable to start container process: "
          "exec: \"nope\": executable file not found in $PATH");
  }
}

TEST_CASE("kill errors are mapped like checkKillError", "[runc]") {
  struct Case {
    std::string text;
    Code code;
    std::string message;
  };
  const Case cases[] = {
      {"runc did not terminate successfully: exit status 1: container not running\n",
       Code::kNotFound, "process already finished: not found"},
      {"os: process already finished", Code::kNotFound, "process already finished: not found"},
      {"exit status 1: No Such Process", Code::kNotFound, "process already finished: not found"},
      {"runc did not terminate successfully: exit status 1: container \"t1\" does not exist\n",
       Code::kNotFound, "no such container: not found"},
      {"runc did not terminate successfully: exit status 1: permission denied\n", Code::kUnknown,
       "unknown error after kill: runc did not terminate successfully: exit status 1: "
       "permission denied\n"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    shim::Status status = shim::oci::kill_error(c.text);
    CHECK(status.code() == c.code);
    CHECK(status.message() == c.message);
  }
  CHECK(shim::oci::kill_errno_error(ESRCH) ==
        shim::Status(Code::kNotFound, "process already finished: not found"));
  CHECK(shim::oci::kill_errno_error(EPERM) ==
        shim::Status(Code::kUnknown, "unknown error after kill: operation not permitted"));
}

TEST_CASE("Go error texts: errno, exit status, JSON strings", "[runc]") {
  CHECK(shim::go_errno_text(ENOENT) == "no such file or directory");
  CHECK(shim::go_errno_text(EACCES) == "permission denied");
  CHECK(shim::go_exit_status_text(137) == "exit status 137");
  CHECK(shim::go_json_quote("a\"b\\c") == R"("a\"b\\c")");
  CHECK(shim::go_json_quote("<&>") == R"("\u003c\u0026\u003e")");
  CHECK(shim::go_json_quote("\n\r\t\x01\x7f") == "\"\\n\\r\\t\\u0001\x7f\"");
  CHECK(shim::go_json_quote("\xe2\x80\xa8 \xc3\xa9") == "\"\\u2028 \xc3\xa9\"");
  CHECK(shim::go_json_quote("bad\xff\xc3") == R"("bad\ufffd\ufffd")");
  CHECK(shim::go_json_quote("/p/a th") == R"("/p/a th")");
}
