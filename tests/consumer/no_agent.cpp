// The plain consumer shim has no agent.
#include "agent.h"

std::vector<std::string> consumer::agent_env(const std::string&) { return {}; }
