#!/bin/sh
# A runc that fails on purpose, for tests/integration/runc_failpoint_e2e_test.cpp: the
# test copies this script into its temp dir and names the copy as the shim's BinaryName
# (`ctr run --runc-binary <copy>`). Two files next to the copy steer it:
#   failpoint  "<runc command> <mode> [<container id>]", e.g. "create exit1 c1": fails that
#              command (for that container only, when an id is given); modes:
#                exit1    write a log.json error line as runc does, exit 1
#                sigkill  die by SIGKILL
#                hang     `sleep 3601` (exec: same pid) until the caller kills it
#                fill     fill the filesystem of the file named by the 4th field (a
#                         small tmpfs holding the bundle), then run the real runc
#                rofs     remount the mount point named by the 4th field read-only,
#                         then run the real runc
#   fds        if it exists, one line per inherited fd is appended to it:
#                "<command> <fd> <readlink target>"
# Otherwise (no file, another command) the real runc runs: $LIBSHIM_REAL_RUNC, else runc.
here=$(dirname "$0")
real=${LIBSHIM_REAL_RUNC:-runc}
command=
log=
expect=
for arg in "$@"; do
  if [ -n "$expect" ]; then
    [ "$expect" = --log ] && log=$arg
    expect=
    continue
  fi
  case "$arg" in
    --root|--log|--log-format|--criu) expect=$arg ;;
    -*) ;;
    *) command=$arg; break ;;
  esac
done
if [ -e "$here/fds" ]; then
  # ls in a child: it inherits exactly what runc would (the shell's own fds are CLOEXEC),
  # plus the /proc dir it opens itself.
  ls -l /proc/self/fd | while read -r _ _ _ _ _ _ _ _ fd _ target; do
    [ -n "$fd" ] && echo "${command:-none} $fd $target" >>"$here/fds"
  done
fi
if [ -e "$here/failpoint" ]; then
  read -r point mode target arg <"$here/failpoint"
  hit=
  if [ "$point" = "$command" ]; then
    hit=1
    if [ -n "$target" ]; then
      hit=
      for word in "$@"; do [ "$word" = "$target" ] && hit=1; done
    fi
  fi
  if [ -n "$hit" ]; then
    case "$mode" in
      exit1)
        [ -n "$log" ] && printf '{"level":"error","msg":"failpoint: %s refused","time":"2026-01-01T00:00:00Z"}\n' \
          "$command" >>"$log"
        echo "failpoint: $command refused" >&2
        exit 1 ;;
      sigkill) kill -9 $$ ;;
      hang) exec sleep 3601 ;;  # the pid the shim started: its kill ends the hang
      fill) cat /dev/zero >"$arg" 2>/dev/null ;;
      rofs) mount -o remount,ro "$arg" ;;
    esac
  fi
fi
exec "$real" "$@"
