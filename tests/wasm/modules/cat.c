// cat.wasm: copies stdin to stdout until end of file, then prints the byte count to stderr.
#include <stdio.h>
#include <unistd.h>

int main(void) {
  char buf[65536];
  long long total = 0;
  ssize_t n;
  while ((n = read(0, buf, sizeof buf)) > 0) {
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(1, buf + off, (size_t)(n - off));
      if (w <= 0) return 2;
      off += w;
    }
    total += n;
  }
  fprintf(stderr, "cat.wasm: %lld bytes\n", total);
  return n < 0 ? 1 : 0;
}
