// memory-hog.wasm MIB: grows its linear memory by MIB MiB, writing every page (through a
// volatile pointer: the compiler may not drop the writes), then prints "allocated" and
// sleeps, so a memory limit below that ends it with an OOM kill.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  long mib = argc > 1 ? atol(argv[1]) : 64;
  unsigned long sum = 0;
  for (long i = 0; i < mib; ++i) {
    volatile char* p = malloc(1 << 20);
    if (!p) {
      printf("malloc failed at %ld MiB\n", i);
      return 1;
    }
    for (long off = 0; off < (1 << 20); off += 4096) {
      p[off] = (char)(i + off);
      sum += (unsigned char)p[off];
    }
  }
  printf("allocated %ld MiB (%lu)\n", mib, sum);
  fflush(stdout);
  for (;;) sleep(1);
}
