// collect_v1_metrics: the files containerd's cgroups v1 controllers read in Stat, with
// their order, partial-fill and error behaviour (a controller stops at its first
// error; missing files are ignored by the caller's IgnoreNotExist).
#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "shim/linux/cgroup.h"
#include "gocompat/utf8.h"
#include "linux/cgroup_file.h"
#include "linux/cgroup_metrics.h"
#include "gocompat/go_compat.h"
#include "shim/logger.h"

namespace shim {

namespace {

using Counters = std::map<std::string, std::uint64_t>;
using shim::Status;

constexpr std::uint64_t kNanosecondsPerSecond = 1000000000;
constexpr std::uint64_t kClockTicks = 100;  // USER_HZ, hard-coded by the library too

std::uint64_t value_of(const Counters& counters, const std::string& key) {
  auto it = counters.find(key);
  return it == counters.end() ? 0 : it->second;
}

void fill_memory_stat(const Counters& raw, cgroups_v1::MemoryStat* stat) {
  auto get = [&raw](const char* key) { return value_of(raw, key); };
  stat->set_cache(get("cache"));
  stat->set_rss(get("rss"));
  stat->set_rss_huge(get("rss_huge"));
  stat->set_mapped_file(get("mapped_file"));
  stat->set_dirty(get("dirty"));
  stat->set_writeback(get("writeback"));
  stat->set_pg_pg_in(get("pgpgin"));
  stat->set_pg_pg_out(get("pgpgout"));
  stat->set_pg_fault(get("pgfault"));
  stat->set_pg_maj_fault(get("pgmajfault"));
  stat->set_inactive_anon(get("inactive_anon"));
  stat->set_active_anon(get("active_anon"));
  stat->set_inactive_file(get("inactive_file"));
  stat->set_active_file(get("active_file"));
  stat->set_unevictable(get("unevictable"));
  stat->set_hierarchical_memory_limit(get("hierarchical_memory_limit"));
  stat->set_hierarchical_swap_limit(get("hierarchical_memsw_limit"));
  stat->set_total_cache(get("total_cache"));
  stat->set_total_rss(get("total_rss"));
  stat->set_total_rss_huge(get("total_rss_huge"));
  stat->set_total_mapped_file(get("total_mapped_file"));
  stat->set_total_dirty(get("total_dirty"));
  stat->set_total_writeback(get("total_writeback"));
  stat->set_total_pg_pg_in(get("total_pgpgin"));
  stat->set_total_pg_pg_out(get("total_pgpgout"));
  stat->set_total_pg_fault(get("total_pgfault"));
  stat->set_total_pg_maj_fault(get("total_pgmajfault"));
  stat->set_total_inactive_anon(get("total_inactive_anon"));
  stat->set_total_active_anon(get("total_active_anon"));
  stat->set_total_inactive_file(get("total_inactive_file"));
  stat->set_total_active_file(get("total_active_file"));
  stat->set_total_unevictable(get("total_unevictable"));
}

// memory.<module>.{usage_in_bytes,max_usage_in_bytes,failcnt,limit_in_bytes}.
Status read_memory_entry(const std::string& dir, const std::string& module,
                         cgroups_v1::MemoryEntry* entry) {
  std::string prefix = module.empty() ? dir + "/memory." : dir + "/memory." + module + ".";
  struct Field {
    const char* name;
    void (cgroups_v1::MemoryEntry::*set)(std::uint64_t);
  };
  static constexpr Field kFields[] = {
      {"usage_in_bytes", &cgroups_v1::MemoryEntry::set_usage},
      {"max_usage_in_bytes", &cgroups_v1::MemoryEntry::set_max},
      {"failcnt", &cgroups_v1::MemoryEntry::set_failcnt},
      {"limit_in_bytes", &cgroups_v1::MemoryEntry::set_limit},
  };
  for (const Field& field : kFields) {
    std::uint64_t value = 0;
    Status status = read_uint_file(prefix + field.name, &value);
    if (!status.ok()) return status;
    (entry->*field.set)(value);
  }
  return {};
}

Status stat_memory(const std::string& dir, cgroups_v1::Metrics* metrics) {
  Counters raw;
  std::string text;
  Status status = go_read_file(dir + "/memory.stat", &text);
  if (!status.ok()) return status;
  cgroups_v1::MemoryStat* memory = metrics->mutable_memory();
  memory->mutable_usage();
  memory->mutable_swap();
  memory->mutable_kernel();
  memory->mutable_kernel_tcp();
  std::size_t bad_line = 0;
  status = parse_kv_lines(text, &raw, &bad_line);
  if (!status.ok()) return shim::unknown(fmt::format("{}: {}", bad_line, status.message()));
  fill_memory_stat(raw, memory);

  Counters oom;
  status = go_read_file(dir + "/memory.oom_control", &text);
  if (!status.ok()) return status;
  cgroups_v1::MemoryOomControl* control = metrics->mutable_memory_oom_control();
  status = parse_kv_lines(text, &oom, &bad_line);
  if (!status.ok()) return shim::unknown(fmt::format("{}: {}", bad_line, status.message()));
  control->set_oom_kill_disable(value_of(oom, "oom_kill_disable"));
  control->set_under_oom(value_of(oom, "under_oom"));
  control->set_oom_kill(value_of(oom, "oom_kill"));

  // Without swap accounting the memsw files are missing: the kmem entries then stay
  // zero too, because the library stops at the first missing file.
  status = read_memory_entry(dir, "", memory->mutable_usage());
  if (status.ok()) status = read_memory_entry(dir, "memsw", memory->mutable_swap());
  if (status.ok()) status = read_memory_entry(dir, "kmem", memory->mutable_kernel());
  if (status.ok()) status = read_memory_entry(dir, "kmem.tcp", memory->mutable_kernel_tcp());
  return status;
}

// cpuacct.stat "user <ticks>\nsystem <ticks>\n" -> nanoseconds.
Status read_cpuacct_ticks(const std::string& path, std::uint64_t* user, std::uint64_t* kernel) {
  std::string text;
  Status status = go_read_file(path, &text);
  if (!status.ok()) return status;
  std::vector<std::string_view> fields = split_fields(text);
  if (fields.size() != 4)
    return shim::unknown(fmt::format("{} is expected to have 4 fields", shim::go_quote(path)));
  struct Slot {
    std::size_t index;
    std::string_view name;
    std::uint64_t* value;
  };
  for (Slot slot : {Slot{0, "user", user}, Slot{2, "system", kernel}}) {
    if (fields[slot.index] != slot.name) {
      return shim::unknown(fmt::format("expected field {} but found {} in {}",
                                       shim::go_quote(slot.name), shim::go_quote(fields[slot.index]),
                                       shim::go_quote(path)));
    }
    status = parse_uint_strict(fields[slot.index + 1], slot.value);
    if (!status.ok()) return status;
  }
  *user = *user * kNanosecondsPerSecond / kClockTicks;
  *kernel = *kernel * kNanosecondsPerSecond / kClockTicks;
  return {};
}

Status stat_cpuacct(const std::string& dir, cgroups_v1::Metrics* metrics) {
  std::uint64_t user = 0;
  std::uint64_t kernel = 0;
  Status status = read_cpuacct_ticks(dir + "/cpuacct.stat", &user, &kernel);
  if (!status.ok()) return status;
  std::uint64_t total = 0;
  status = read_uint_file(dir + "/cpuacct.usage", &total);
  if (!status.ok()) return status;
  std::string text;
  status = go_read_file(dir + "/cpuacct.usage_percpu", &text);
  if (!status.ok()) return status;
  std::vector<std::uint64_t> per_cpu;
  for (std::string_view field : split_fields(text)) {
    std::uint64_t value = 0;
    status = parse_uint_strict(field, &value);
    if (!status.ok()) return status;
    per_cpu.push_back(value);
  }
  cgroups_v1::CPUUsage* usage = metrics->mutable_cpu()->mutable_usage();
  usage->set_total(total);
  usage->set_user(user);
  usage->set_kernel(kernel);
  usage->mutable_per_cpu()->Assign(per_cpu.begin(), per_cpu.end());
  return {};
}

Status stat_cpu(const std::string& dir, cgroups_v1::Metrics* metrics) {
  std::string text;
  Status status = go_read_file(dir + "/cpu.stat", &text);
  if (!status.ok()) return status;
  cgroups_v1::Throttle* throttling = metrics->mutable_cpu()->mutable_throttling();
  for (std::string_view line : split_lines(text)) {
    std::string key;
    std::uint64_t value = 0;
    status = parse_kv(line, &key, &value);
    if (!status.ok()) return status;
    if (key == "nr_periods") throttling->set_periods(value);
    if (key == "nr_throttled") throttling->set_throttled_periods(value);
    if (key == "throttled_time") throttling->set_throttled_time(value);
  }
  return {};
}

Status stat_pids(const std::string& dir, cgroups_v1::Metrics* metrics) {
  std::uint64_t current = 0;
  Status status = read_uint_file(dir + "/pids.current", &current);
  if (!status.ok()) return status;
  std::string text;
  status = go_read_file(dir + "/pids.max", &text);
  if (!status.ok()) return status;
  std::uint64_t limit = 0;  // "max" reads as 0 in v1
  std::string_view max = go_trim_space(text);
  if (max != "max") {
    status = parse_uint_lenient(max, &limit);
    if (!status.ok()) return status;
  }
  metrics->mutable_pids()->set_current(current);
  metrics->mutable_pids()->set_limit(limit);
  return {};
}

Status stat_hugetlb(const CgroupFs& fs, const std::string& dir, cgroups_v1::Metrics* metrics) {
  for (const std::string& size : hugepage_sizes_v1(fs.hugepages)) {
    std::string prefix = fmt::format("{}/hugetlb.{}.", dir, size);
    std::uint64_t usage = 0, max = 0, failcnt = 0;
    Status status = read_uint_file(prefix + "usage_in_bytes", &usage);
    if (status.ok()) status = read_uint_file(prefix + "max_usage_in_bytes", &max);
    if (status.ok()) status = read_uint_file(prefix + "failcnt", &failcnt);
    if (!status.ok()) return status;
    cgroups_v1::HugetlbStat* stat = metrics->add_hugetlb();
    stat->set_usage(usage);
    stat->set_max(max);
    stat->set_failcnt(failcnt);
    stat->set_pagesize(size);
  }
  return {};
}

// /proc/partitions: (major, minor) -> "/dev/<name>", first occurrence wins.
std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> read_partitions(
    const std::string& text) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> devices;
  std::vector<std::string_view> lines = split_lines(text);
  for (std::size_t i = 2; i < lines.size(); ++i) {  // header line and a blank line first
    std::vector<std::string_view> fields = split_fields(lines[i]);
    std::uint64_t major = 0, minor = 0;
    if (fields.size() < 4 || !parse_uint_strict(fields[0], &major).ok() ||
        !parse_uint_strict(fields[1], &minor).ok())
      continue;
    devices.emplace(std::pair(major, minor), go_join_path("/dev", fields[3]));
  }
  return devices;
}

// Splits a blkio line at spaces and colons: "8:0 Read 4096" -> {8, 0, Read, 4096}.
std::vector<std::string_view> blkio_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (pos < line.size()) {
    std::size_t end = line.find_first_of(" :", pos);
    if (end == std::string_view::npos) end = line.size();
    if (end > pos) fields.push_back(line.substr(pos, end - pos));
    pos = end + 1;
  }
  return fields;
}

using Devices = std::map<std::pair<std::uint64_t, std::uint64_t>, std::string>;
using BlkioList = google::protobuf::RepeatedPtrField<cgroups_v1::BlkIOEntry>;

Status read_blkio_entries(const Devices& devices, const std::string& dir, const std::string& name,
                          BlkioList* entries) {
  std::string text;
  Status status = go_read_file(fmt::format("{}/blkio.{}", dir, name), &text);
  if (!status.ok()) return status;
  for (std::string_view line : split_lines(text)) {
    std::vector<std::string_view> fields = blkio_fields(line);
    if (fields.size() == 2 && fields[0] == "Total") continue;
    if (fields.size() < 3)
      return shim::unknown(fmt::format("invalid line found while parsing {}: {}", dir, line));
    std::uint64_t major = 0, minor = 0, value = 0;
    std::size_t value_index = fields.size() == 4 ? 3 : 2;
    status = parse_uint_strict(fields[0], &major);
    if (status.ok()) status = parse_uint_strict(fields[1], &minor);
    if (status.ok()) status = parse_uint_strict(fields[value_index], &value);
    if (!status.ok()) return status;
    // op and device become proto3 strings, which must be UTF-8: skip a corrupt line.
    if (fields.size() == 4 && !detail::is_valid_utf8(fields[2])) continue;
    cgroups_v1::BlkIOEntry* entry = entries->Add();
    auto device = devices.find(std::pair(major, minor));
    if (device != devices.end() && detail::is_valid_utf8(device->second)) entry->set_device(device->second);
    entry->set_major(major);
    entry->set_minor(minor);
    if (fields.size() == 4) entry->set_op(std::string(fields[2]));
    entry->set_value(value);
  }
  return {};
}

// The CFQ/BFQ *_recursive files when the kernel has them and they say anything, else
// the throttle.* files (always there).
Status stat_blkio(const CgroupFs& fs, const std::string& dir, cgroups_v1::Metrics* metrics) {
  cgroups_v1::BlkIOStat* blkio = metrics->mutable_blkio();
  std::string partitions;
  bool scheduler_files = path_exists(dir + "/blkio.io_serviced_recursive");
  Status status = go_read_file(fs.proc + "/partitions", &partitions);
  if (!status.ok()) return status;
  Devices devices = read_partitions(partitions);
  if (scheduler_files) {
    const std::pair<const char*, BlkioList*> lists[] = {
        {"sectors_recursive", blkio->mutable_sectors_recursive()},
        {"io_service_bytes_recursive", blkio->mutable_io_service_bytes_recursive()},
        {"io_serviced_recursive", blkio->mutable_io_serviced_recursive()},
        {"io_queued_recursive", blkio->mutable_io_queued_recursive()},
        {"io_service_time_recursive", blkio->mutable_io_service_time_recursive()},
        {"io_wait_time_recursive", blkio->mutable_io_wait_time_recursive()},
        {"io_merged_recursive", blkio->mutable_io_merged_recursive()},
        {"time_recursive", blkio->mutable_io_time_recursive()},
    };
    int size = 0;
    for (const auto& [name, list] : lists) {
      status = read_blkio_entries(devices, dir, name, list);
      if (!status.ok()) return status;
      size += list->size();
    }
    if (size > 0) return {};
  }
  status = read_blkio_entries(devices, dir, "throttle.io_serviced",
                              blkio->mutable_io_serviced_recursive());
  if (!status.ok()) return status;
  return read_blkio_entries(devices, dir, "throttle.io_service_bytes",
                            blkio->mutable_io_service_bytes_recursive());
}

void add_rdma_entries(std::string_view text,
                      google::protobuf::RepeatedPtrField<cgroups_v1::RdmaEntry>* entries) {
  for (const RdmaLine& line : parse_rdma_lines(text)) {
    cgroups_v1::RdmaEntry* entry = entries->Add();
    entry->set_device(line.device);
    entry->set_hca_handles(line.hca_handles);
    entry->set_hca_objects(line.hca_objects);
  }
}

Status stat_rdma(const std::string& dir, cgroups_v1::Metrics* metrics) {
  std::string current, max;
  Status status = go_read_file(dir + "/rdma.current", &current);
  if (status.ok()) status = go_read_file(dir + "/rdma.max", &max);
  if (!status.ok()) return status;
  // A device that went away between the two reads: no rdma stats this time.
  auto pieces = [](const std::string& text) { return std::count(text.begin(), text.end(), '\n'); };
  if (pieces(current) != pieces(max)) return {};
  cgroups_v1::RdmaStat* rdma = metrics->mutable_rdma();
  add_rdma_entries(current, rdma->mutable_current());
  add_rdma_entries(max, rdma->mutable_limit());
  return {};
}

Status collect_controller(const CgroupFs& fs, const std::string& name, const std::string& dir,
                          cgroups_v1::Metrics* metrics) {
  if (name == "memory") return stat_memory(dir, metrics);
  if (name == "cpuacct") return stat_cpuacct(dir, metrics);
  if (name == "cpu") return stat_cpu(dir, metrics);
  if (name == "pids") return stat_pids(dir, metrics);
  if (name == "blkio") return stat_blkio(fs, dir, metrics);
  if (name == "rdma") return stat_rdma(dir, metrics);
  if (name == "hugetlb") return stat_hugetlb(fs, dir, metrics);
  return {};
}

}  // namespace

shim::Status collect_v1_metrics(const CgroupFs& fs, const CgroupPaths& paths,
                                cgroups_v1::Metrics* out) {
  out->Clear();
  // The library always answers with cpu {usage {}, throttling {}}.
  out->mutable_cpu()->mutable_usage();
  out->mutable_cpu()->mutable_throttling();
  for (const auto& [name, dir] : paths.controllers) {
    Status status = collect_controller(fs, name, dir, out);
    if (!status.ok() && !is_not_exist(status)) return status;
  }
  return {};
}

}  // namespace shim
