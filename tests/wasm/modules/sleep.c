// sleep.wasm: prints "sleeping" and sleeps forever in WASI's poll_oneoff (only a signal
// ends it): an idle module, for memory figures of many running containers.
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("sleeping\n");
  fflush(stdout);
  for (;;) sleep(3600);
}
