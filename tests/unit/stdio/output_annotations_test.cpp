// The io.libshim.output.* annotations: sizes, policies, and errors naming the annotation.
#include <unistd.h>

#include <string>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "stdio/output_annotations.h"
#include "support/temp_dir.h"

namespace {

using shim::OutputBufferOptions;
using shim::OutputOverflow;

shim::Status apply_json(const std::string& annotations, OutputBufferOptions* options) {
  boost::json::object spec =
      boost::json::parse(R"({"ociVersion":"1.0.2","annotations":)" + annotations + "}").as_object();
  return shim::stdio::apply_output_annotations(spec, options);
}

TEST_CASE("output annotations: defaults stay without them", "[stdio][output-buffer]") {
  OutputBufferOptions options;
  REQUIRE(apply_json(R"({"other":"x"})", &options).ok());
  CHECK(options.memory_bytes == (1u << 20));
  CHECK(options.spill_bytes == (64u << 20));
  CHECK(options.overflow == OutputOverflow::kBlock);
  boost::json::object no_annotations = boost::json::parse(R"({"ociVersion":"1.0.2"})").as_object();
  CHECK(shim::stdio::apply_output_annotations(no_annotations, &options).ok());
}

TEST_CASE("output annotations: sizes with suffixes and the policy", "[stdio][output-buffer]") {
  OutputBufferOptions options;
  REQUIRE(apply_json(
              R"({"io.libshim.output.buffer-bytes":"65536","io.libshim.output.spill-bytes":"2Gi",)"
              R"("io.libshim.output.overflow":"drop"})",
              &options)
              .ok());
  CHECK(options.memory_bytes == 65536);
  CHECK(options.spill_bytes == (std::uint64_t{2} << 30));
  CHECK(options.overflow == OutputOverflow::kDrop);
  REQUIRE(
      apply_json(R"({"io.libshim.output.buffer-bytes":"4Ki","io.libshim.output.spill-bytes":"0",)"
                 R"("io.libshim.output.overflow":"block"})",
                 &options)
          .ok());
  CHECK(options.memory_bytes == 4096);
  CHECK(options.spill_bytes == 0);
  CHECK(options.overflow == OutputOverflow::kBlock);
  REQUIRE(apply_json(R"({"io.libshim.output.buffer-bytes":"3Mi"})", &options).ok());
  CHECK(options.memory_bytes == 3u << 20);
}

TEST_CASE("output annotations: bad values are InvalidArgument naming the annotation",
          "[stdio][output-buffer]") {
  struct Case {
    std::string annotations;
    std::string message;
  };
  auto [annotations, message] = GENERATE(values<Case>({
      {R"({"io.libshim.output.overflow":"later"})",
       R"(annotation io.libshim.output.overflow: "later" is not block or drop)"},
      {R"({"io.libshim.output.buffer-bytes":"-1"})",
       R"(annotation io.libshim.output.buffer-bytes: "-1" is not a size in bytes (a number, optionally with Ki, Mi or Gi))"},
      {R"({"io.libshim.output.buffer-bytes":"1MB"})",
       R"(annotation io.libshim.output.buffer-bytes: "1MB" is not a size in bytes (a number, optionally with Ki, Mi or Gi))"},
      {R"({"io.libshim.output.spill-bytes":""})",
       R"(annotation io.libshim.output.spill-bytes: "" is not a size in bytes (a number, optionally with Ki, Mi or Gi))"},
      {R"({"io.libshim.output.buffer-bytes":"2Gi"})",
       R"(annotation io.libshim.output.buffer-bytes: "2Gi" is above the limit of 1073741824 bytes)"},
      {R"({"io.libshim.output.spill-bytes":"99999999999999999999"})",
       R"(annotation io.libshim.output.spill-bytes: "99999999999999999999" is not a size in bytes (a number, optionally with Ki, Mi or Gi))"},
      {R"({"io.libshim.output.spill-bytes":12})",
       R"(annotation io.libshim.output.spill-bytes: not a string)"},
  }));
  OutputBufferOptions options;
  options.memory_bytes = 7;
  shim::Status status = apply_json(annotations, &options);
  CHECK(status.code() == shim::Code::kInvalidArgument);
  CHECK(status.message() == message);
  CHECK(options.memory_bytes == 7);  // nothing applied
}

TEST_CASE("output spill dir: the bundle's work dir when there is one", "[stdio][output-buffer]") {
  shim::test::TempDir bundle("bundle-");
  CHECK(shim::stdio::output_spill_dir(bundle.path()) == bundle.path());
  shim::test::TempDir work("work-");
  REQUIRE(::symlink(work.path().c_str(), bundle.sub("work").c_str()) == 0);
  CHECK(shim::stdio::output_spill_dir(bundle.path()) == bundle.path() + "/work");
}

}  // namespace
