// OCI process semantics for runtimes that start container processes themselves: an OCI
// `process` object (the `process` of config.json, or an exec's process JSON) made into
// a SpawnRequest that runs it as runc would.
//
// Honoured: `args` (args[0] without a '/' is searched in the PATH of the process's own
// `env`, inside the container's root, as the process's user: see
// SpawnRequest::search_path), `env` (checked, the last value of a name wins, HOME added
// from the container's /etc/passwd when missing), `cwd`, `user` (uid, gid,
// additionalGids, umask), `rlimits`, `noNewPrivileges`, `capabilities` (all five sets),
// `oomScoreAdj`, `terminal` with `consoleSize`. A field this cannot apply
// (`apparmorProfile`, `selinuxLabel`, `scheduler`, `ioPriority`, `execCPUAffinity`, the
// Windows-only `commandLine` and `user.username`), an unknown capability or rlimit, a
// value of the wrong type or out of range: InvalidArgument naming the field
// ("process.apparmorProfile: ..."). Unknown fields are ignored, as the runtime spec asks.
// Nothing throws.
//
// What the caller adds: namespaces, hold, a joined process (SpawnRequest's container
// fields). The request's fds point into the ProcessSpawn (the pty), so spawn it while
// the ProcessSpawn lives.
//
// Threading: any thread; blocking (it reads the container's /etc/passwd and opens a
// pty), so a pool thread, as every Instance method is. One ProcessSpawn is not for
// concurrent use.
#pragma once

#include <string>
#include <string_view>

#include <boost/json/value.hpp>

#include "shim/process/spawner.h"
#include "shim/runtime.h"
#include "shim/status.h"
#include "shim/stdio/pty.h"

namespace shim::oci {

// Where the process runs, and its stdio.
struct ProcessTarget {
  // The container's root as the shim sees it: the request chroots there, and the
  // executable and HOME are looked up inside it. Empty: no chroot (the host's "/").
  std::string root;
  // The stdio libshim made for the process (Instance::create's, ExecConfig::stdio). With
  // a console socket the process gets a new pty instead of the fds.
  ProcessStdio stdio;
};

// A process ready to spawn.
struct ProcessSpawn {
  // Spawn this (after adding namespaces, hold...): path, argv, env, cwd, root, fds,
  // user, umask, rlimits, no_new_privileges, capabilities, oom_score_adj,
  // controlling_terminal and search_path set from the OCI process.
  SpawnRequest request;
  // With `terminal: true`: the new pty, sized as `consoleSize`; request.fds maps its
  // slave to fds 0-2. Empty otherwise.
  Pty pty;
  // Where the pty's master goes (the target's ProcessStdio::console_socket).
  std::string console_socket;

  // With a pty: sends its master to the console socket (shim/stdio/console_sender.h),
  // as runc does before its create or exec returns, then closes the shim's copies of
  // both ends (the process holds the slave; libshim's console copy the master). Call
  // once the process was spawned. Without a pty: nothing, OK.
  Status send_console();
};

// Makes `*spawn` from `process`, an OCI process object, for `target`.
Status spawn_request_from_process(const boost::json::value& process, const ProcessTarget& target,
                                  ProcessSpawn* spawn);

// The same from the JSON text of a process (ExecConfig::spec); text that is not JSON is
// an InvalidArgument naming the parse error.
Status spawn_request_from_process(std::string_view process_json, const ProcessTarget& target,
                                  ProcessSpawn* spawn);

}  // namespace shim::oci
