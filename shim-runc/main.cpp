// containerd-shim-runc-v2 on libshim: a drop-in for containerd's Go runc shim. All of it
// is the library's shim over a runc-compatible CLI (shim/oci/cli_manager.h), named as
// containerd's runc shim and driving runc unless the runtime options name another CLI
// (BinaryName: crun, runsc, ...).
#include "shim/oci/cli_manager.h"

int main(int argc, char** argv) {
  shim::oci::CliManager manager("io.containerd.runc.v2", "runc");
  return shim::run(argc, argv, manager);
}
