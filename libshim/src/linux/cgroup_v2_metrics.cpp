// collect_v2_metrics: the files containerd's cgroups v3 library (cgroup2.Manager.Stat)
// reads, with its defaults: single-value files read as 0 when missing or malformed and
// "max" as UINT64_MAX; pressure files give no PSI message when missing or malformed.
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "shim/linux/cgroup.h"
#include "linux/cgroup_metrics.h"
#include "linux/cgroup_file.h"
#include "gocompat/go_compat.h"
#include "shim/logger.h"

namespace shim {

namespace {

using Counters = std::map<std::string, std::uint64_t>;
using shim::Status;

// The library's getStatFileContentUint64: at most 32 bytes are looked at.
std::uint64_t read_single_value(const std::string& path) {
  std::string text;
  if (!go_read_file(path, &text).ok()) return 0;
  std::string_view value = go_trim_space(std::string_view(text).substr(0, 32));
  if (value == "max") return std::numeric_limits<std::uint64_t>::max();
  std::uint64_t parsed = 0;
  if (!parse_uint_lenient(value, &parsed).ok()) return 0;
  return parsed;
}

// readKVStatsFile: NotFound when the file is missing; a bad line fails with the
// library's wording.
Status read_v2_kv(const std::string& path, Counters* out) {
  std::string text;
  Status status = go_read_file(path, &text);
  if (!status.ok()) return status;
  std::size_t bad_line = 0;
  status = parse_kv_lines(text, out, &bad_line);
  if (status.ok()) return status;
  std::string_view line = split_lines(text)[bad_line];
  return shim::unknown(fmt::format("error while parsing {} (line={}): {}", path, shim::go_quote(line),
                                   status.message()));
}

std::uint64_t value_of(const Counters& counters, const char* key) {
  auto it = counters.find(key);
  return it == counters.end() ? 0 : it->second;
}

bool parse_double(std::string_view text, double* value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

// "avg10=0.00 avg60=0.00 avg300=0.00 total=0"; false on a malformed pair.
bool parse_psi_data(const std::vector<std::string_view>& pairs, cgroups_v2::PSIData* data) {
  for (std::size_t i = 1; i < pairs.size(); ++i) {
    std::size_t equals = pairs[i].find('=');
    if (equals == std::string_view::npos) return false;
    std::string_view key = pairs[i].substr(0, equals);
    std::string_view text = pairs[i].substr(equals + 1);
    double number = 0;
    if (key == "total") {
      std::uint64_t total = 0;
      if (!parse_uint_strict(text, &total).ok()) return false;
      data->set_total(total);
      continue;
    }
    if (key != "avg10" && key != "avg60" && key != "avg300") continue;
    if (!parse_double(text, &number)) return false;
    if (key == "avg10") data->set_avg10(number);
    if (key == "avg60") data->set_avg60(number);
    if (key == "avg300") data->set_avg300(number);
  }
  return true;
}

// A *.pressure file; nullopt when it is missing, unreadable (PSI off) or malformed.
std::optional<cgroups_v2::PSIStats> read_psi(const std::string& path) {
  std::string text;
  if (!go_read_file(path, &text).ok()) return std::nullopt;
  cgroups_v2::PSIStats psi;
  for (std::string_view line : split_lines(text)) {
    std::vector<std::string_view> parts = split_fields(line);
    if (parts.empty()) continue;
    cgroups_v2::PSIData* data = nullptr;
    if (parts[0] == "some") data = psi.mutable_some();
    if (parts[0] == "full") data = psi.mutable_full();
    if (data == nullptr) continue;
    data->Clear();
    if (!parse_psi_data(parts, data)) return std::nullopt;
  }
  return psi;
}

Status read_cpu(const std::string& dir, cgroups_v2::CPUStat* cpu) {
  Counters raw;
  Status status = read_v2_kv(dir + "/cpu.stat", &raw);
  if (is_not_exist(status)) return {};  // an empty CPUStat, not even PSI
  if (!status.ok()) return status;
  cpu->set_usage_usec(value_of(raw, "usage_usec"));
  cpu->set_user_usec(value_of(raw, "user_usec"));
  cpu->set_system_usec(value_of(raw, "system_usec"));
  cpu->set_nr_periods(value_of(raw, "nr_periods"));
  cpu->set_nr_throttled(value_of(raw, "nr_throttled"));
  cpu->set_throttled_usec(value_of(raw, "throttled_usec"));
  cpu->set_nr_bursts(value_of(raw, "nr_bursts"));
  cpu->set_burst_usec(value_of(raw, "burst_usec"));
  if (auto psi = read_psi(dir + "/cpu.pressure")) *cpu->mutable_psi() = std::move(*psi);
  return {};
}

void fill_memory_counters(const Counters& raw, cgroups_v2::MemoryStat* memory) {
  auto get = [&raw](const char* key) { return value_of(raw, key); };
  memory->set_anon(get("anon"));
  memory->set_file(get("file"));
  memory->set_kernel_stack(get("kernel_stack"));
  memory->set_slab(get("slab"));
  memory->set_sock(get("sock"));
  memory->set_shmem(get("shmem"));
  memory->set_file_mapped(get("file_mapped"));
  memory->set_file_dirty(get("file_dirty"));
  memory->set_file_writeback(get("file_writeback"));
  memory->set_anon_thp(get("anon_thp"));
  memory->set_inactive_anon(get("inactive_anon"));
  memory->set_active_anon(get("active_anon"));
  memory->set_inactive_file(get("inactive_file"));
  memory->set_active_file(get("active_file"));
  memory->set_unevictable(get("unevictable"));
  memory->set_slab_reclaimable(get("slab_reclaimable"));
  memory->set_slab_unreclaimable(get("slab_unreclaimable"));
  memory->set_pgfault(get("pgfault"));
  memory->set_pgmajfault(get("pgmajfault"));
  memory->set_workingset_refault(get("workingset_refault"));
  memory->set_workingset_activate(get("workingset_activate"));
  memory->set_workingset_nodereclaim(get("workingset_nodereclaim"));
  memory->set_pgrefill(get("pgrefill"));
  memory->set_workingset_refault_anon(get("workingset_refault_anon"));
  memory->set_workingset_refault_file(get("workingset_refault_file"));
  memory->set_workingset_activate_anon(get("workingset_activate_anon"));
  memory->set_workingset_activate_file(get("workingset_activate_file"));
  memory->set_pgscan(get("pgscan"));
  memory->set_pgsteal(get("pgsteal"));
  memory->set_pgactivate(get("pgactivate"));
  memory->set_pgdeactivate(get("pgdeactivate"));
  memory->set_pglazyfree(get("pglazyfree"));
  memory->set_pglazyfreed(get("pglazyfreed"));
  memory->set_thp_fault_alloc(get("thp_fault_alloc"));
  memory->set_thp_collapse_alloc(get("thp_collapse_alloc"));
}

Status read_memory(const std::string& dir, cgroups_v2::MemoryStat* memory) {
  Counters raw;
  Status status = read_v2_kv(dir + "/memory.stat", &raw);
  if (is_not_exist(status)) return {};  // an empty MemoryStat: no usage files either
  if (!status.ok()) return status;
  fill_memory_counters(raw, memory);
  memory->set_usage(read_single_value(dir + "/memory.current"));
  memory->set_usage_limit(read_single_value(dir + "/memory.max"));
  memory->set_max_usage(read_single_value(dir + "/memory.peak"));
  memory->set_swap_usage(read_single_value(dir + "/memory.swap.current"));
  memory->set_swap_limit(read_single_value(dir + "/memory.swap.max"));
  memory->set_swap_max_usage(read_single_value(dir + "/memory.swap.peak"));
  if (auto psi = read_psi(dir + "/memory.pressure")) *memory->mutable_psi() = std::move(*psi);
  return {};
}

// memory.events; the message is left out when the file is missing or empty.
Status read_memory_events(const std::string& dir, cgroups_v2::Metrics* metrics) {
  Counters raw;
  Status status = read_v2_kv(dir + "/memory.events", &raw);
  if (!status.ok() && !is_not_exist(status)) return status;
  if (raw.empty()) return {};
  cgroups_v2::MemoryEvents* events = metrics->mutable_memory_events();
  events->set_low(value_of(raw, "low"));
  events->set_high(value_of(raw, "high"));
  events->set_max(value_of(raw, "max"));
  events->set_oom(value_of(raw, "oom"));
  events->set_oom_kill(value_of(raw, "oom_kill"));
  events->set_oom_group_kill(value_of(raw, "oom_group_kill"));
  return {};
}

// io.stat: "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per device. Like the
// library, a bad major:minor ends the list; bad pairs are skipped.
void read_io(const std::string& dir, cgroups_v2::IOStat* io) {
  std::string text;
  if (!go_read_file(dir + "/io.stat", &text).ok()) return;
  for (std::string_view line : split_lines(text)) {
    std::vector<std::string_view> parts;
    for (std::size_t pos = 0;;) {
      std::size_t space = line.find(' ', pos);
      parts.push_back(line.substr(pos, space - pos));
      if (space == std::string_view::npos) break;
      pos = space + 1;
    }
    if (parts.size() < 2) continue;
    std::size_t colon = parts[0].find(':');
    if (colon == std::string_view::npos || parts[0].find(':', colon + 1) != std::string_view::npos)
      continue;
    std::uint64_t major = 0, minor = 0;
    if (!parse_uint_strict(parts[0].substr(0, colon), &major).ok() ||
        !parse_uint_strict(parts[0].substr(colon + 1), &minor).ok())
      return;
    cgroups_v2::IOEntry* entry = io->add_usage();
    entry->set_major(major);
    entry->set_minor(minor);
    for (std::size_t i = 1; i < parts.size(); ++i) {
      std::size_t equals = parts[i].find('=');
      if (equals == std::string_view::npos || parts[i].find('=', equals + 1) != std::string_view::npos)
        continue;
      std::string_view key = parts[i].substr(0, equals);
      std::uint64_t value = 0;
      if (!parse_uint_strict(parts[i].substr(equals + 1), &value).ok()) continue;
      if (key == "rbytes") entry->set_rbytes(value);
      if (key == "wbytes") entry->set_wbytes(value);
      if (key == "rios") entry->set_rios(value);
      if (key == "wios") entry->set_wios(value);
    }
  }
}

void add_rdma_entries(const std::string& path,
                      google::protobuf::RepeatedPtrField<cgroups_v2::RdmaEntry>* entries) {
  std::string text;
  if (!go_read_file(path, &text).ok()) return;
  for (const RdmaLine& line : parse_rdma_lines(text)) {
    cgroups_v2::RdmaEntry* entry = entries->Add();
    entry->set_device(line.device);
    entry->set_hca_handles(line.hca_handles);
    entry->set_hca_objects(line.hca_objects);
  }
}

// "max <n>" line of hugetlb.<size>.events: the failure count.
std::uint64_t read_events_max(const std::string& path) {
  std::string text;
  if (!go_read_file(path, &text).ok()) return 0;
  for (std::string_view line : split_lines(text)) {
    std::vector<std::string_view> fields = split_fields(line);
    if (fields.size() != 2 || fields[0] != "max") continue;
    std::uint64_t value = 0;
    return parse_uint_lenient(fields[1], &value).ok() ? value : 0;
  }
  return 0;
}

void read_hugetlb(const CgroupFs& fs, const std::string& dir, cgroups_v2::Metrics* metrics) {
  for (const std::string& size : hugepage_sizes_v2(fs.hugepages)) {
    std::string prefix = fmt::format("{}/hugetlb.{}.", dir, size);
    cgroups_v2::HugeTlbStat* stat = metrics->add_hugetlb();
    stat->set_max(read_single_value(prefix + "max"));
    stat->set_current(read_single_value(prefix + "current"));
    stat->set_pagesize(size);
    stat->set_failcnt(read_events_max(prefix + "events"));
  }
}

}  // namespace

shim::Status collect_v2_metrics(const CgroupFs& fs, const CgroupPaths& paths,
                                cgroups_v2::Metrics* out) {
  out->Clear();
  const std::string& dir = paths.unified;
  cgroups_v2::PidsStat* pids = out->mutable_pids();
  pids->set_current(read_single_value(dir + "/pids.current"));
  pids->set_limit(read_single_value(dir + "/pids.max"));
  Status status = read_cpu(dir, out->mutable_cpu());
  if (!status.ok()) return status;
  status = read_memory(dir, out->mutable_memory());
  if (!status.ok()) return status;
  status = read_memory_events(dir, out);
  if (!status.ok()) return status;
  cgroups_v2::IOStat* io = out->mutable_io();
  read_io(dir, io);
  if (auto psi = read_psi(dir + "/io.pressure")) *io->mutable_psi() = std::move(*psi);
  cgroups_v2::RdmaStat* rdma = out->mutable_rdma();
  add_rdma_entries(dir + "/rdma.current", rdma->mutable_current());
  add_rdma_entries(dir + "/rdma.max", rdma->mutable_limit());
  read_hugetlb(fs, dir, out);
  return {};
}

}  // namespace shim
