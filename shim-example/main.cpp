// containerd-shim-example-v1: everything shim-specific is in ExampleManager and
// ExampleService; libshim does the rest (start, delete, -info, serving, reaping, events).
#include "example_manager.h"

int main(int argc, char** argv) {
  example::ExampleManager manager;
  return shim::run(argc, argv, manager);
}
