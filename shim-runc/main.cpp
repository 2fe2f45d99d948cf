// containerd-shim-runc-v2 on libshim: a drop-in for containerd's Go runc shim.
#include "shim-runc/runc_manager.h"

int main(int argc, char** argv) {
  runc_shim::RuncManager manager;
  return shim::run(argc, argv, manager);
}
