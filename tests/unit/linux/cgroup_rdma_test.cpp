// parse_rdma_lines: the rdma.current / rdma.max syntax the v1 and v2 collectors share.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "linux/cgroup_file.h"

using shim::parse_rdma_lines;
using shim::RdmaLine;

TEST_CASE("parse_rdma_lines reads devices, max and bad values", "[cgroup]") {
  std::vector<RdmaLine> lines = parse_rdma_lines(
      "mlx4_0 hca_handle=2 hca_object=2000\n"
      "mlx5_1 hca_handle=max hca_object=x\n"
      "short hca_handle=1\n"
      "mlx5_2 hca_object=4294967296 other=7\n"
      "mlx5_3 hca_handle=3=4 hca_object=-5\n");
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].device == "mlx4_0");
  CHECK(lines[0].hca_handles == 2);
  CHECK(lines[0].hca_objects == 2000);
  CHECK(lines[1].device == "mlx5_1");
  CHECK(lines[1].hca_handles == 0xffffffffu);
  CHECK(lines[1].hca_objects == 0);  // not a number
  CHECK(lines[2].device == "mlx5_2");
  CHECK(lines[2].hca_handles == 0);  // missing
  CHECK(lines[2].hca_objects == 0);  // beyond uint32
  CHECK(lines[3].device == "mlx5_3");
  CHECK(lines[3].hca_handles == 0);  // a second '='
  CHECK(lines[3].hca_objects == 0);  // negative: the library's lenient 0
}

TEST_CASE("parse_rdma_lines skips a device name that is not UTF-8", "[cgroup]") {
  // Found by fuzz_cgroup_v2: the name goes into a proto3 string field, which libprotobuf
  // would log about and containerd could not decode.
  std::vector<RdmaLine> lines =
      parse_rdma_lines("mlx\xff_0 hca_handle=1 hca_object=2\nmlx5_0 hca_handle=3 hca_object=4\n");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].device == "mlx5_0");
  CHECK(lines[0].hca_handles == 3);
}
