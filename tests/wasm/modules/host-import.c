// host-import.wasm: imports env.host_fn, which WASI does not provide (the shim must refuse
// it at Create).
__attribute__((import_module("env"), import_name("host_fn"))) int host_fn(void);

int main(void) { return host_fn(); }
