#include "shim/process/call_deadline.h"

namespace shim {
namespace {

thread_local CallDeadline current;  // see the header: the one piece of per-thread context

}  // namespace

CallDeadline current_call_deadline() { return current; }

CallDeadlineScope::CallDeadlineScope(CallDeadline deadline) : previous_(current) { current = deadline; }

CallDeadlineScope::~CallDeadlineScope() { current = previous_; }

}  // namespace shim
