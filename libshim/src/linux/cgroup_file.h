// Reading and parsing cgroupfs files with the semantics of containerd's cgroups library
// (what the Go runc shim's Stats returns depends on them): lenient unsigned parsing
// (negative -> 0), "key value" lines, Go's error texts. Blocking file IO: call these on
// the work pool, except for the one-line OOM counters the event loop reads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "shim/status.h"

namespace shim {

// NotFound (ENOENT) from go_read_file: the library's IgnoreNotExist / os.IsNotExist.
bool is_not_exist(const shim::Status& status);

// Go's strings.Fields: runs of ASCII white space separate the fields.
std::vector<std::string_view> split_fields(std::string_view text);

// bufio.Scanner lines: split at '\n', no empty token after a final newline.
std::vector<std::string_view> split_lines(std::string_view text);

// strconv.ParseUint(s, 10, 64), with its error text
// (`strconv.ParseUint: parsing "x": invalid syntax` / `... value out of range`).
shim::Status parse_uint_strict(std::string_view text, std::uint64_t* value);

// The library's parseUint: a negative number (in or beyond int64 range) gives 0.
shim::Status parse_uint_lenient(std::string_view text, std::uint64_t* value);

// The library's parseKV: exactly two fields, the second lenient-unsigned; otherwise
// "cgroups: parsing file with invalid format failed".
shim::Status parse_kv(std::string_view line, std::string* key, std::uint64_t* value);

// The library's readUint: the whole file, trimmed, lenient-unsigned.
shim::Status read_uint_file(const std::string& path, std::uint64_t* value);

// "key value" lines into `out` (later keys win). On a bad line: its parse_kv error, with
// its index in *bad_line (callers word the error as their Go counterpart does).
shim::Status parse_kv_lines(std::string_view text, std::map<std::string, std::uint64_t>* out,
                            std::size_t* bad_line);

// One line of rdma.current / rdma.max: "mlx4_0 hca_handle=2 hca_object=2000".
struct RdmaLine {
  std::string device;
  std::uint32_t hca_handles = 0;
  std::uint32_t hca_objects = 0;
};

// The lines of three fields; "max" is UINT32_MAX, a bad or missing value leaves its count
// 0. (The v1 library skips a pair with a second '=', v2 fails to parse its value: the
// same outcome.)
std::vector<RdmaLine> parse_rdma_lines(std::string_view text);

// Huge page sizes from the names under `dir` (/sys/kernel/mm/hugepages/hugepages-2048kB,
// ...), sorted by directory entry name; unreadable dir -> empty.
//  v1 style (go-units CustomSize "%g%s", base 1024): "2MB", "1GB", "64KB".
//  v2 style (runc): "2MB", "1GB", sizes under 1 MiB as "<n>KB".
std::vector<std::string> hugepage_sizes_v1(const std::string& dir);
std::vector<std::string> hugepage_sizes_v2(const std::string& dir);

// One write(2) of `content` into an existing file (cgroupfs control files: no O_CREAT,
// no O_TRUNC). Unknown "open|write <path>: <errno text>" on failure.
shim::Status write_control_file(const std::string& path, std::string_view content);

// Whether `path` exists (lstat succeeds).
bool path_exists(const std::string& path);

}  // namespace shim
