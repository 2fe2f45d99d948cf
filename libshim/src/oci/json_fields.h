// Checked reads of OCI JSON fields, with errors that name the field by its path
// ("process.user.uid: want an integer in 0..4294967295, got a string"). Nothing here
// throws: an OCI spec comes from the outside and is read on libshim's pool, where an
// exception would cost the RPC its reply. All errors are InvalidArgument.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "shim/status.h"

namespace shim::oci {

// `object`'s member `key`, or nullptr when it is absent or null (encoding/json leaves a
// field with a null at its zero value, as if absent).
const boost::json::value* member(const boost::json::object& object, std::string_view key);

// "<field>: <what>" as InvalidArgument.
Status field_error(std::string_view field, std::string_view what);

// "<field>: want <what>, got a string" (or "an object"...) as InvalidArgument.
Status type_error(std::string_view field, std::string_view what, const boost::json::value& got);

// The value as an object / a string / a bool / strings; else a type error naming `field`.
Status read_object(const boost::json::value& value, std::string_view field,
                   const boost::json::object** out);
Status read_string(const boost::json::value& value, std::string_view field, std::string* out);
Status read_bool(const boost::json::value& value, std::string_view field, bool* out);
Status read_strings(const boost::json::value& value, std::string_view field,
                    std::vector<std::string>* out);
// An integer literal (no fraction, no exponent) in [min, max].
Status read_int(const boost::json::value& value, std::string_view field, std::int64_t min,
                std::int64_t max, std::int64_t* out);
// An unsigned integer literal up to `max` (uint64's whole range by default).
Status read_uint(const boost::json::value& value, std::string_view field, std::uint64_t* out,
                 std::uint64_t max = UINT64_MAX);
// Unsigned integers up to `max`, each.
Status read_uints(const boost::json::value& value, std::string_view field, std::uint64_t max,
                  std::vector<std::uint64_t>* out);

}  // namespace shim::oci
