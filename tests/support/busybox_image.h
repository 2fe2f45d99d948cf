// A one-layer OCI image holding a busybox rootfs (support/busybox_rootfs.h), imported into
// a PrivateContainerd with `ctr image import`, for tests that need an image rather than
// `ctr run --rootfs`: e.g. `ctr container checkpoint` / `ctr container restore` refuse
// containers without one.
#pragma once

#include <string>

#include "support/containerd_fixture.h"

namespace shim::test {

// Builds an OCI layout tar from `rootfs` under fx.dir() (sha256sum and tar do the work)
// and imports it; returns the image name, "libshim.test/busybox:latest". Throws
// std::runtime_error naming the step that failed.
std::string import_busybox_image(const PrivateContainerd& fx, const std::string& rootfs);

}  // namespace shim::test
