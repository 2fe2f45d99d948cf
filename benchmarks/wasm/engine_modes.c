// How WasmEdge could run a container's module, measured outside any container
// (benchmarks/wasm/engine_modes.sh runs it): through its C API, with libwasmedge loaded
// per container (`exec`: what a runner process per container costs) or once in a
// zygote that forks a child per container (`zygote`, `hold`). The CLI is measured by the
// script. The C API is reached through dlopen/dlsym with the few declarations below
// (WasmEdge's include/api/wasmedge/wasmedge.h, 0.14-0.17), so no -dev package is needed.
//
//   engine_modes exec MODULE ARGS...        load, run once; prints the times to stderr
//   engine_modes zygote N MODULE ARGS...    load once, fork+run N times, mean per run
//   engine_modes hold N MODULE ARGS...      load once, fork N children running MODULE
// The module's preopened "/" is $ENGINE_MODES_ROOT (default /).
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct { uint32_t Code; } WasmEdgeResult;
typedef struct { uint32_t Length; const char* Buf; } WasmEdgeString;
enum { kHostRegistrationWasi = 0 };

static void* engine;

static void* need(const char* name) {
  void* p = dlsym(engine, name);
  if (p == NULL) {
    fprintf(stderr, "libwasmedge has no %s\n", name);
    exit(99);
  }
  return p;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Runs module argv[0] with argv as its args; returns its WASI exit code.
static int run_module(int argc, char** argv) {
  void* (*configure_create)(void) = need("WasmEdge_ConfigureCreate");
  void (*add_host)(void*, int) = need("WasmEdge_ConfigureAddHostRegistration");
  void* (*vm_create)(const void*, void*) = need("WasmEdge_VMCreate");
  void* (*import_module)(void*, int) = need("WasmEdge_VMGetImportModuleContext");
  void (*init_wasi)(void*, const char* const*, uint32_t, const char* const*, uint32_t,
                    const char* const*, uint32_t) = need("WasmEdge_ModuleInstanceInitWASI");
  WasmEdgeResult (*run_file)(void*, const char*, WasmEdgeString, const void*, uint32_t, void*,
                             uint32_t) = need("WasmEdge_VMRunWasmFromFile");
  WasmEdgeString (*string_create)(const char*) = need("WasmEdge_StringCreateByCString");
  uint32_t (*exit_code)(const void*) = need("WasmEdge_ModuleInstanceWASIGetExitCode");

  void* config = configure_create();
  add_host(config, kHostRegistrationWasi);
  void* vm = vm_create(config, NULL);
  void* wasi = import_module(vm, kHostRegistrationWasi);
  const char* root = getenv("ENGINE_MODES_ROOT");
  char preopen[4096];
  snprintf(preopen, sizeof preopen, "/:%s", root ? root : "/");
  const char* preopens[] = {preopen};
  init_wasi(wasi, (const char* const*)argv, (uint32_t)argc, NULL, 0, preopens, 1);
  run_file(vm, argv[0], string_create("_start"), NULL, 0, NULL, 0);
  return (int)exit_code(wasi);
}

// A forked child's module writes to /dev/null: only the zygote reports.
static int run_quietly(int argc, char** argv) {
  int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  dup2(null_fd, 1);
  dup2(null_fd, 2);
  return run_module(argc, argv);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: engine_modes exec|zygote|hold [N] MODULE ARGS...\n");
    return 2;
  }
  double start = now_ms();
  engine = dlopen("libwasmedge.so.0", RTLD_NOW);
  if (engine == NULL) {
    fprintf(stderr, "dlopen libwasmedge.so.0: %s\n", dlerror());
    return 98;
  }
  double loaded = now_ms();
  if (strcmp(argv[1], "exec") == 0) {
    int code = run_module(argc - 2, argv + 2);
    fprintf(stderr, "exec load_ms=%.1f total_ms=%.1f exit=%d\n", loaded - start,
            now_ms() - start, code);
    return code;
  }
  int n = atoi(argv[2]);
  if (strcmp(argv[1], "hold") == 0) {
    for (int i = 0; i < n; ++i) {
      if (fork() == 0) _exit(run_quietly(argc - 3, argv + 3));
    }
    pause();
    return 0;
  }
  double total = 0;
  for (int i = 0; i < n; ++i) {
    double t = now_ms();
    pid_t pid = fork();
    if (pid == 0) _exit(run_quietly(argc - 3, argv + 3));
    int status;
    waitpid(pid, &status, 0);
    total += now_ms() - t;
  }
  fprintf(stderr, "zygote load_ms=%.1f per_run_ms=%.2f runs=%d\n", loaded - start, total / n, n);
  return 0;
}
