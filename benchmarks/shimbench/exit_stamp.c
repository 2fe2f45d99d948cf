/* exit_stamp: the container process of the exit-notification benchmark.
 *
 *   exit_stamp FILE DELAY_MS
 *
 * Sleeps DELAY_MS (so the container is fully started and idle), opens FILE, reads
 * CLOCK_REALTIME, writes it as decimal nanoseconds and exits at once: the stamp is taken
 * a few microseconds before the exit_group() that the shim's reaper will see. The clock
 * is the host's (CLOCK_REALTIME is not namespaced), so the driver can compare it with its
 * own time.time_ns() and with the shim's exited_at. Built static by the driver because
 * the benchmark rootfs has busybox only (busybox `date` has no %N). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  long delay_ms = atol(argv[2]);
  struct timespec delay = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
  nanosleep(&delay, NULL);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 3;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char line[32];
  int n = snprintf(line, sizeof line, "%lld\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
  if (write(fd, line, (size_t)n) != n) return 4;
  _exit(0);
}
