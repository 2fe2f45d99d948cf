// hello.wasm: prints its argv and the environment variable GREETING, then exits with the
// status its first argument gives (0 without one).
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  printf("hello from wasm\n");
  for (int i = 0; i < argc; ++i) printf("argv[%d]=%s\n", i, argv[i]);
  const char* greeting = getenv("GREETING");
  printf("GREETING=%s\n", greeting ? greeting : "(unset)");
  fprintf(stderr, "to stderr\n");
  fflush(stdout);
  return argc > 1 ? atoi(argv[1]) : 0;
}
