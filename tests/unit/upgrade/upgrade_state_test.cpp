// The live-upgrade state envelope (upgrade/upgrade_state.h): written to a memfd and read
// back, other formats refused with both numbers, garbage refused with the reason, and
// close-on-exec cleared and set on the kept fds.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "upgrade/upgrade_state.h"

TEST_CASE("Upgrade state: a document round-trips through its memfd", "[upgrade]") {
  boost::json::object document = {{"server", {{"listeners", {3}}}},
                                  {"events", boost::json::array()}};
  int fd = -1;
  REQUIRE(shim::upgrade::write_state(document, shim::upgrade::kStateFormat, &fd).ok());
  CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  int format = 0;
  boost::json::object read;
  REQUIRE(shim::upgrade::read_state(fd, &format, &read).ok());
  CHECK(format == shim::upgrade::kStateFormat);
  CHECK(read == document);
  ::close(fd);

  // A program of the previous format's libshim hands over format 1: still read.
  REQUIRE(shim::upgrade::write_state(document, 1, &fd).ok());
  REQUIRE(shim::upgrade::read_state(fd, &format, &read).ok());
  CHECK(format == 1);
  CHECK(read == document);
  ::close(fd);
  CHECK(shim::upgrade::readable_state_formats() == "1,2");
}

TEST_CASE("Upgrade state: another format or garbage is refused", "[upgrade]") {
  int fd = -1;
  REQUIRE(shim::upgrade::write_state({}, 7, &fd).ok());
  int format = 0;
  boost::json::object read;
  shim::Status other = shim::upgrade::read_state(fd, &format, &read);
  CHECK(format == 7);
  CHECK(other.code() == shim::Code::kFailedPrecondition);
  CHECK(other.message() == "upgrade state format 7 (this program reads formats 1,2)");
  ::close(fd);

  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  REQUIRE(::write(pipe_fds[1], "hello", 5) == 5);
  ::close(pipe_fds[1]);
  shim::Status garbage = shim::upgrade::read_state(pipe_fds[0], &format, &read);
  CHECK(garbage.code() == shim::Code::kInternal);  // a pipe cannot be rewound
  ::close(pipe_fds[0]);

  REQUIRE(shim::upgrade::write_state({}, 1, &fd).ok());
  REQUIRE(::ftruncate(fd, 10) == 0);  // "libshim-up": no header line
  shim::Status cut = shim::upgrade::read_state(fd, &format, &read);
  CHECK(cut.code() == shim::Code::kInvalidArgument);
  CHECK(cut.message().find("has no \"libshim-upgrade-state <format>\" header") !=
        std::string::npos);
  ::close(fd);
}

TEST_CASE("Upgrade state: kept fds lose close-on-exec and get it back", "[upgrade]") {
  int a = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int b = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  shim::upgrade::KeptFds kept;
  kept.add(a);
  kept.add(b);
  REQUIRE(kept.clear_cloexec().ok());
  CHECK((::fcntl(a, F_GETFD) & FD_CLOEXEC) == 0);
  CHECK((::fcntl(b, F_GETFD) & FD_CLOEXEC) == 0);
  kept.set_cloexec();
  CHECK((::fcntl(a, F_GETFD) & FD_CLOEXEC) != 0);
  CHECK((::fcntl(b, F_GETFD) & FD_CLOEXEC) != 0);
  // A closed fd fails the whole step and leaves the others as they were.
  shim::upgrade::KeptFds broken;
  broken.add(a);
  broken.add(1000);
  CHECK(!broken.clear_cloexec().ok());
  CHECK((::fcntl(a, F_GETFD) & FD_CLOEXEC) != 0);
  ::close(a);
  ::close(b);
}
