"""Execs into a running container over the shim's own socket, as containerd's task service
sends them (Exec, Start, Wait, Delete on containerd.task.v2.Task), without a `ctr` process
and a containerd round trip per exec. The shim does the same work as for `ctr task exec`
(runc exec, reaping, the exec-added/exec-started/exit/delete events to containerd); only
the caller is cheaper, so a soak reaches 10^5 execs in about half the time.

The process spec is the container's own (the bundle's config.json) with its args
replaced, as `ctr task exec` builds it (cmd/ctr/commands/tasks/exec.go).
"""
import json
import os

from . import ttrpc

PROCESS_SPEC_TYPE = "types.containerd.io/opencontainers/runtime-spec/1/Process"


def bundle_dir(side, cid):
    """containerd 1.6's bundle of a task: <state>/io.containerd.runtime.v2.task/<ns>/<id>."""
    return os.path.join(side.dir, "state", "io.containerd.runtime.v2.task", side.ws.namespace, cid)


class Execer:
    """One connection to the shim serving `cid`; exec() runs argv and returns its status."""

    def __init__(self, side, cid, argv, timeout=30.0):
        bundle = bundle_dir(side, cid)
        with open(os.path.join(bundle, "address")) as f:
            address = f.read().strip()
        with open(os.path.join(bundle, "config.json")) as f:
            process = json.load(f)["process"]
        process["args"] = list(argv)
        process["terminal"] = False
        spec = json.dumps(process, separators=(",", ":"))
        self._any = ttrpc.field_bytes(1, PROCESS_SPEC_TYPE) + ttrpc.field_bytes(2, spec)
        self._cid = cid
        self._client = ttrpc.Client(address, timeout=timeout)

    def exec(self, exec_id):
        """Exec, Start, Wait, Delete of one process; its exit status (TtrpcError on a failed
        call, which a soak counts as a failure)."""
        ids = ttrpc.field_bytes(1, self._cid) + ttrpc.field_bytes(2, exec_id)
        self._client.call("Exec", ids + ttrpc.field_bytes(7, self._any))
        self._client.call("Start", ids)
        waited = ttrpc.parse_fields(self._client.call("Wait", ids))
        self._client.call("Delete", ids)
        return waited.get(1, [0])[0]

    def close(self):
        self._client.close()
