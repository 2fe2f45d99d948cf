// big-output.wasm MIB: writes MIB MiB to stdout, byte i of the stream being (i * 7 + i / 4096)
// mod 251, so a reader can check every byte and its position.
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  long long total = (argc > 1 ? atoll(argv[1]) : 16) << 20;
  static unsigned char buf[65536];
  for (long long at = 0; at < total; at += (long long)sizeof buf) {
    for (size_t j = 0; j < sizeof buf; ++j) {
      long long i = at + (long long)j;
      buf[j] = (unsigned char)((i * 7 + i / 4096) % 251);
    }
    for (size_t off = 0; off < sizeof buf;) {
      ssize_t w = write(1, buf + off, sizeof buf - off);
      if (w <= 0) return 2;
      off += (size_t)w;
    }
  }
  return 0;
}
