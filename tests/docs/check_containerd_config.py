#!/usr/bin/env python3
"""Loads the shipped containerd config snippets into real containerd and checks them.

    check_containerd_config.py REPO_DIR [CONTAINERD_2_1_BIN]

`containerd --config <file> config dump` prints the configuration containerd would run
with; the libshim handler tables must be in the plugin CRI reads, with their
runtime_type, runtime_path and options, and the debug level must be "debug":
  packaging/containerd/config-v2.toml  under the system's containerd (1.6) and 2.1
                                       (which migrates version 2 on load)
  packaging/containerd/config-v3.toml  under 2.1
Without a 2.1 binary (cmake/fetch-containerd.sh could not fetch it) only the 1.6 part
runs, and the output says so.
"""
import os
import subprocess
import sys
import tomllib

SHIMS = {
    'libshim': ('io.containerd.runc.v2', '/usr/libexec/libshim/containerd-shim-runc-v2'),
    'libshim-example': ('io.containerd.example.v1', '/usr/libexec/libshim/containerd-shim-example-v1'),
}


def check(containerd, config, plugin):
    problems = []
    dump = subprocess.run([containerd, '--config', config, 'config', 'dump'],
                          capture_output=True, text=True, timeout=60)
    if dump.returncode != 0:
        return [f'{containerd} config dump {config}: exit {dump.returncode}: {dump.stderr}']
    data = tomllib.loads(dump.stdout)
    if data.get('debug', {}).get('level') != 'debug':
        problems.append(f'{config} under {containerd}: debug level is not "debug"')
    runtimes = (data.get('plugins', {}).get(plugin, {}).get('containerd', {})
                .get('runtimes', {}))
    for name, (runtime_type, path) in SHIMS.items():
        table = runtimes.get(name)
        where = f'{config} under {containerd}: [plugins."{plugin}"...runtimes.{name}]'
        if table is None:
            problems.append(f'{where} missing from the dump')
            continue
        if table.get('runtime_type') != runtime_type:
            problems.append(f'{where}: runtime_type {table.get("runtime_type")!r}')
        if table.get('runtime_path') != path:
            problems.append(f'{where}: runtime_path {table.get("runtime_path")!r}')
    libshim = runtimes.get('libshim', {})
    if libshim.get('options', {}).get('SystemdCgroup') is not True:
        problems.append(f'{config} under {containerd}: libshim options lost SystemdCgroup')
    return problems


def main(repo, containerd21=None):
    v2 = os.path.join(repo, 'packaging/containerd/config-v2.toml')
    v3 = os.path.join(repo, 'packaging/containerd/config-v3.toml')
    problems = check('/usr/bin/containerd', v2, 'io.containerd.grpc.v1.cri')
    ran = 1
    if containerd21 and os.access(containerd21, os.X_OK):
        problems += check(containerd21, v2, 'io.containerd.cri.v1.runtime')
        problems += check(containerd21, v3, 'io.containerd.cri.v1.runtime')
        ran += 2
    for p in problems:
        print(p)
    if ran == 1:
        print(f'note: no containerd 2.1 at {containerd21!r}: checked under 1.6 only')
    print(f'checked {ran} config loads, {len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
