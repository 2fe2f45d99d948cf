// spin.wasm: prints "spinning" and loops forever (only a signal ends it).
#include <stdio.h>

int main(void) {
  printf("spinning\n");
  fflush(stdout);
  volatile unsigned long n = 0;
  for (;;) ++n;
}
