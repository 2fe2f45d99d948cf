/* native-probe.so: a shared library whose constructor writes "native code ran" to fd 1
   (a raw write(2): it needs no libc, so it loads anywhere), put where a module was. A
   Wasm engine must refuse it; WasmEdge's loader, given a path, would dlopen it (its AOT
   format) and so run the constructor (tests/wasm/wasm_e2e_test.cpp). */
static const char kMessage[] = "native code ran\n";

__attribute__((constructor)) static void ran(void) {
#if defined(__x86_64__)
  long result;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "a"(1L), "D"(1L), "S"(kMessage), "d"(sizeof kMessage - 1)
                   : "rcx", "r11", "memory");
  (void)result;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = 64; /* write */
  register long x0 __asm__("x0") = 1;
  register const char* x1 __asm__("x1") = kMessage;
  register long x2 __asm__("x2") = sizeof kMessage - 1;
  __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
#endif /* elsewhere it prints nothing: the test's "never ran" then proves less */
}
