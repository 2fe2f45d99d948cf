#include "process/child_settings.h"

#include <linux/capability.h>

#include <cstdlib>

#include <fmt/format.h>

#include "gocompat/go_compat.h"
#include "shim/fs.h"

namespace shim::spawn {
namespace {

// Go's filepath.SplitList: "" has no entries, an empty entry means "." (LookPath).
std::vector<std::string> search_entries(std::string_view list) {
  std::vector<std::string> entries;
  if (list.empty()) return entries;
  for (std::size_t pos = 0;;) {
    std::size_t colon = list.find(':', pos);
    std::string_view entry =
        list.substr(pos, colon == std::string_view::npos ? colon : colon - pos);
    entries.emplace_back(entry.empty() ? "." : entry);
    if (colon == std::string_view::npos) break;
    pos = colon + 1;
  }
  return entries;
}

std::uint64_t known_capabilities(int last_cap) {
  return last_cap >= 63 ? ~std::uint64_t{0} : (std::uint64_t{1} << (last_cap + 1)) - 1;
}

}  // namespace

int kernel_last_capability() {
  static const int last = [] {
    std::string text;
    if (read_file("/proc/sys/kernel/cap_last_cap", &text).ok()) {
      char* end = nullptr;
      long value = std::strtol(text.c_str(), &end, 10);
      if (end != text.c_str() && value >= 0 && value < 64) return static_cast<int>(value);
    }
    return static_cast<int>(CAP_LAST_CAP);
  }();
  return last;
}

Status ChildSettings::prepare(const SpawnRequest& request) {
  request_ = &request;
  if (request.oom_score_adj) {
    if (*request.oom_score_adj < -1000 || *request.oom_score_adj > 1000) {
      return invalid_argument(fmt::format("spawn {}: oom_score_adj {} is not in -1000..1000",
                                          request.path, *request.oom_score_adj));
    }
    oom_score_adj_ = std::to_string(*request.oom_score_adj);
  }
  if (request.umask && *request.umask > 0777) {
    return invalid_argument(
        fmt::format("spawn {}: umask {:o} is not in 0..0777", request.path, *request.umask));
  }
  for (const SpawnRlimit& limit : request.rlimits)
    rlimits_.push_back({limit.resource, limit.soft, limit.hard});
  if (request.user) groups_ = request.user->additional_gids;
  if (request.capabilities) {
    // Capabilities this kernel does not have cannot be granted: left out, as runc
    // (libcontainer/capabilities/capabilities.go) ignores them with a warning.
    cap_last_cap_ = kernel_last_capability();
    std::uint64_t known = known_capabilities(cap_last_cap_);
    const CapabilitySets& sets = *request.capabilities;
    capabilities_ = {sets.bounding & known, sets.effective & known, sets.permitted & known,
                     sets.inheritable & known, sets.ambient & known};
  }
  search_ = request.search_path.has_value() && !request.run_in_child &&
            request.path.find('/') == std::string::npos;
  if (search_) {
    for (const std::string& entry : search_entries(*request.search_path)) {
      candidates_.push_back(go_join_path(entry, request.path));
    }
    candidate_relative_ = std::make_unique<bool[]>(candidates_.size() + 1);
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      candidate_pointers_.push_back(candidates_[i].data());
      candidate_relative_[i] = candidates_[i].front() != '/';
    }
  }
  return {};
}

void ChildSettings::fill(ChildPlan* plan) const {
  const SpawnRequest& request = *request_;
  if (request.oom_score_adj) {
    plan->oom_score_adj = oom_score_adj_.c_str();
    plan->oom_score_adj_length = static_cast<int>(oom_score_adj_.size());
  }
  plan->controlling_terminal = request.controlling_terminal;
  plan->umask = request.umask ? static_cast<int>(*request.umask) : -1;
  plan->rlimits = rlimits_.data();
  plan->rlimit_count = static_cast<int>(rlimits_.size());
  plan->no_new_privileges = request.no_new_privileges;
  plan->has_capabilities = request.capabilities.has_value();
  plan->cap_last_cap = cap_last_cap_;
  plan->cap_bounding = capabilities_.bounding;
  plan->cap_effective = capabilities_.effective;
  plan->cap_permitted = capabilities_.permitted;
  plan->cap_inheritable = capabilities_.inheritable;
  plan->cap_ambient = capabilities_.ambient;
  plan->has_user = request.user.has_value();
  if (request.user) {
    plan->uid = request.user->uid;
    plan->gid = request.user->gid;
    plan->groups = groups_.data();
    plan->group_count = static_cast<int>(groups_.size());
  }
  plan->search = search_;
  plan->candidates = candidate_pointers_.data();
  plan->candidate_relative = candidate_relative_.get();
  plan->candidate_count = static_cast<int>(candidates_.size());
}

}  // namespace shim::spawn
