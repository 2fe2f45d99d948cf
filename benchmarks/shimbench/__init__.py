"""Side-by-side benchmark of shim-runc against containerd's Go runc shim (issue 6).

Entry point: benchmarks/compare_shims.py. Modules:
  env        private containerds, rootfs, ctr, the events subscriber
  procs      /proc readers (shim pids, smaps, threads, CPU time)
  ttrpc      a minimal ttrpc client (for the shim-start measurement)
  task_exec  execs over a shim's socket as containerd sends them (soak.py --exec-via shim)
  latency    ctr run --rm, exec, exit notification
  resources  memory, threads, stdout throughput
  startup    shim start, binary size, micro-benchmarks
  report     statistics, markdown, JSON, gnuplot chart, docs/performance.md
"""
