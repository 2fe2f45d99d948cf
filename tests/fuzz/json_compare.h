// Comparing JSON documents that went through print + parse.
#pragma once

#include <cmath>
#include <cstddef>

#include <boost/json.hpp>

namespace fuzz {

namespace json = boost::json;

// Equality of documents, except that doubles may differ in their last bits: Boost.JSON
// 1.81 parses numbers imprecisely, so a double does not always survive print + parse
// (Go's decoder would give the exact one; ours only matters for integers and strings).
// `b` is `a` printed and parsed again: an infinite double in `a` became null (go_compat.cpp).
inline bool same_document(const json::value& a, const json::value& b, bool* has_double) {
  if (a.is_double() && !std::isfinite(a.get_double())) return b.is_null();
  if (a.is_double() || b.is_double()) {
    *has_double = true;
    if (!a.is_double() || !b.is_double()) return false;
    double x = a.get_double(), y = b.get_double();
    return x == y || std::fabs(x - y) <= std::fabs(x) * 1e-15;
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_array()) {
    const json::array& x = a.get_array();
    const json::array& y = b.get_array();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!same_document(x[i], y[i], has_double)) return false;
    }
    return true;
  }
  if (a.is_object()) {
    const json::object& x = a.get_object();
    const json::object& y = b.get_object();
    if (x.size() != y.size()) return false;
    for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
      if (i->key() != j->key() || !same_document(i->value(), j->value(), has_double)) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace fuzz
