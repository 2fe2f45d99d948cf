/* A real, separate program for the busybox test image (Debian's busybox-static runs its
 * applets inside the shell, so "a process that does X" needs its own binary):
 *   helper hog        allocate and touch memory 1 MiB at a time until the kernel kills it
 *   helper spin SECS  burn one CPU for SECS seconds (0: forever), then exit 0
 *   helper term-exit CODE  wait for SIGTERM, print "got SIGTERM" and exit CODE
 *   helper ignore-term     ignore SIGTERM and sleep until killed */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_term;

static void on_term(int sig) {
  (void)sig;
  got_term = 1;
}

static int hog(void) {
  for (;;) {
    char* block = malloc(1 << 20);
    if (block == NULL) return 2;
    memset(block, 0x5a, 1 << 20); /* touch every page: charge it to the cgroup */
  }
}

static int spin(long seconds) {
  const time_t end = time(NULL) + seconds;
  volatile unsigned long n = 0;
  while (seconds == 0 || time(NULL) < end) n++;
  return 0;
}

static int term_exit(int code) {
  struct sigaction sa = {.sa_handler = on_term};
  sigaction(SIGTERM, &sa, NULL);
  printf("ready\n");
  fflush(stdout);
  while (!got_term) pause();
  printf("got SIGTERM\n");
  fflush(stdout);
  return code;
}

static int ignore_term(void) {
  signal(SIGTERM, SIG_IGN);
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "hog") == 0) return hog();
  if (argc >= 3 && strcmp(argv[1], "spin") == 0) return spin(atol(argv[2]));
  if (argc >= 3 && strcmp(argv[1], "term-exit") == 0) return term_exit(atoi(argv[2]));
  if (argc >= 2 && strcmp(argv[1], "ignore-term") == 0) return ignore_term();
  fprintf(stderr, "usage: helper hog | spin SECS | term-exit CODE | ignore-term\n");
  return 64;
}
