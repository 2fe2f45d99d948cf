// trap.wasm: prints a line, then executes `unreachable` (a trap).
#include <stdio.h>

int main(void) {
  printf("about to trap\n");
  fflush(stdout);
  __builtin_trap();
}
