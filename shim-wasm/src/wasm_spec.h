// The OCI spec of a Wasm container, made from the one containerd wrote.
//
// runc still makes the container (namespaces, cgroup, mounts, seccomp, user): only its
// root and process change. The root becomes <bundle>/wasm-root, which holds the image's
// rootfs at /rootfs, the engine's usr/ read-only at /engine/usr, the kernel file systems
// (/proc, /dev, /sys) where the spec puts them, and a symlink per top-level entry of the
// rootfs (/bin -> rootfs/bin, ...) so that a native exec (a shell) finds its files. The
// process is the engine, given the module and its args, every variable of the spec's
// env through --env, and the rootfs as its only preopened directory (/ for the module).
// Every other mount goes under /rootfs, where the module sees it.
//
// Threading: plain functions.
#pragma once

#include <string>

#include <boost/json/object.hpp>

#include "engine.h"
#include "rootfs_file.h"
#include "shim/status.h"
#include "shim/unique_fd.h"

namespace shim_wasm {

// What a process's args[0] names.
struct Entrypoint {
  bool wasm = false;  // a WebAssembly file: the engine runs it
  std::string path;   // as the container sees it (absolute, in the rootfs)
};

// Decides what `process` (an OCI Process) runs in the rootfs at `rootfs` (a host dir): a
// module when args[0] ends in ".wasm" or names a file with the WebAssembly magic (a
// relative args[0] is taken from the process's cwd; one without '/' is looked up in the
// rootfs along the process's PATH, as runc's exec would). InvalidArgument when the
// process has no args.
shim::Status classify(const boost::json::object& process, const std::string& rootfs,
                      Entrypoint* entry);

// The process that runs module `entry` with `process`'s args and env through `engine`.
boost::json::object wasm_process(const boost::json::object& process, const Engine& engine,
                                 const Entrypoint& entry);

// The whole spec of a Wasm container whose init is `entry`: `spec` with its root at
// `wasm_root` (see the file's description), the rootfs (host dir `rootfs`) and the engine
// bind-mounted into it, and its process run by wasm_process().
boost::json::object wasm_spec(const boost::json::object& spec, const std::string& rootfs,
                              const std::string& wasm_root, const Engine& engine,
                              const Entrypoint& entry);

// Makes `wasm_root` (a new directory): mount points for /rootfs and /engine/usr, and a
// symlink "rootfs/<name>" for each top-level entry of `rootfs` that is not a kernel file
// system's mount point.
shim::Status prepare_wasm_root(const std::string& wasm_root, const std::string& rootfs);

}  // namespace shim_wasm
