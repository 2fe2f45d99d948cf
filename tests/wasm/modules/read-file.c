// read-file.wasm PATH...: prints each file's content, or "cannot open PATH: <error>" and
// exits 1 at the first it cannot open.
#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    FILE* f = fopen(argv[i], "r");
    if (!f) {
      printf("cannot open %s: %s\n", argv[i], strerror(errno));
      return 1;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
    fclose(f);
  }
  return 0;
}
