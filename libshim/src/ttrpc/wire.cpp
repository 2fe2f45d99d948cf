#include "ttrpc/wire.h"

#include <exception>

#include <fmt/format.h>

#include "common/proto_wire.h"
#include "gocompat/utf8.h"
#include "ttrpc/frame.h"

namespace shim::ttrpc::wire {

using shim::detail::append_varint;
using shim::detail::ProtoReader;
using shim::detail::varint_size;
using shim::detail::WireField;
using shim::detail::WireType;

namespace {

constexpr char kResponsePayloadTag = 0x12;  // field 2, length-delimited

void append_header(std::string& out, std::uint32_t stream_id, FrameType type, std::size_t length) {
  auto header = encode_header(
      {static_cast<std::uint32_t>(length), stream_id, static_cast<std::uint8_t>(type), 0});
  out.append(header.data(), header.size());
}

// proto3 omits empty strings and zero numbers; fields go out in field-number order,
// as Go's generated marshaller writes them.
std::size_t bytes_field_size(std::string_view value) {
  return value.empty() ? 0 : 1 + varint_size(value.size()) + value.size();
}

void append_bytes_field(std::string& out, char tag, std::string_view value) {
  if (value.empty()) return;
  out.push_back(tag);
  append_varint(out, value.size());
  out.append(value);
}

// int32 fields are sign-extended to 64 bits on the wire.
std::uint64_t int32_wire(std::int32_t value) {
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
}

}  // namespace

std::string response_frame(std::uint32_t stream_id, const Status& status,
                           std::string_view payload) {
  // Response{status=1: google.rpc.Status{code=1, message=2}, payload=2}. Success carries
  // no status at all.
  std::size_t status_size = 0;
  std::uint64_t code = 0;
  // google.rpc.Status.message is a proto3 string: containerd's ttrpc client (Go
  // protobuf) fails the whole reply when it is not UTF-8, and an error may quote bytes
  // of a file (a module's import names).
  std::string valid_message;
  std::string_view message = status.message();
  if (!shim::detail::is_valid_utf8(message)) {
    valid_message = shim::detail::to_valid_utf8(message);
    message = valid_message;
  }
  if (!status.ok()) {
    code = int32_wire(static_cast<std::int32_t>(status.code()));
    status_size = 1 + varint_size(code) + bytes_field_size(message);
  }
  std::size_t length =
      (status.ok() ? 0 : 1 + varint_size(status_size) + status_size) + bytes_field_size(payload);
  std::string frame;
  frame.reserve(kHeaderSize + length);
  append_header(frame, stream_id, FrameType::kResponse, length);
  if (!status.ok()) {
    frame.push_back(0x0a);
    append_varint(frame, status_size);
    frame.push_back(0x08);
    append_varint(frame, code);
    append_bytes_field(frame, 0x12, message);
  }
  append_bytes_field(frame, kResponsePayloadTag, payload);
  return frame;
}

namespace {

std::size_t key_value_size(const std::pair<std::string, std::string>& pair) {
  return bytes_field_size(pair.first) + bytes_field_size(pair.second);
}

}  // namespace

std::string request_frame(std::uint32_t stream_id, std::string_view service,
                          std::string_view method, std::string_view payload,
                          std::optional<std::chrono::nanoseconds> timeout,
                          const Metadata& metadata) {
  // Request{service=1, method=2, payload=3, timeout_nano=4, metadata=5}
  auto timeout_nano = static_cast<std::uint64_t>(timeout ? timeout->count() : 0);
  std::size_t length = bytes_field_size(service) + bytes_field_size(method) +
                       bytes_field_size(payload) +
                       (timeout_nano == 0 ? 0 : 1 + varint_size(timeout_nano));
  for (const auto& pair : metadata) {
    std::size_t size = key_value_size(pair);
    length += 1 + varint_size(size) + size;  // an empty KeyValue is still sent
  }
  std::string frame;
  frame.reserve(kHeaderSize + length);
  append_header(frame, stream_id, FrameType::kRequest, length);
  append_bytes_field(frame, 0x0a, service);
  append_bytes_field(frame, 0x12, method);
  append_bytes_field(frame, 0x1a, payload);
  if (timeout_nano != 0) {
    frame.push_back(0x20);
    append_varint(frame, timeout_nano);
  }
  for (const auto& pair : metadata) {
    frame.push_back(0x2a);
    append_varint(frame, key_value_size(pair));
    append_bytes_field(frame, 0x0a, pair.first);
    append_bytes_field(frame, 0x12, pair.second);
  }
  return frame;
}

namespace {

bool decode_key_value(std::string_view message, Metadata* metadata) {
  ProtoReader reader(message);
  WireField field;
  std::string_view key, value;
  while (reader.next(&field)) {
    if (field.type != WireType::kLengthDelimited) continue;
    if (field.number == 1) key = field.payload;
    if (field.number == 2) value = field.payload;
  }
  if (reader.failed()) return false;
  metadata->emplace_back(key, value);
  return true;
}

bool decode_status(std::string_view message, std::int32_t* code, std::string_view* text) {
  ProtoReader reader(message);
  WireField field;
  while (reader.next(&field)) {
    if (field.number == 1 && field.type == WireType::kVarint) {
      *code = static_cast<std::int32_t>(field.varint);
    } else if (field.number == 2 && field.type == WireType::kLengthDelimited) {
      *text = field.payload;
    }  // details (3) and unknown fields are skipped
  }
  return !reader.failed();
}

}  // namespace

bool decode_request(std::string_view message, RequestView* request) {
  // Unknown fields and fields of an unexpected wire type are skipped, as protobuf does.
  ProtoReader reader(message);
  WireField field;
  while (reader.next(&field)) {
    bool is_bytes = field.type == WireType::kLengthDelimited;
    switch (field.number) {
      case 1:
        if (is_bytes) request->service = field.payload;
        break;
      case 2:
        if (is_bytes) request->method = field.payload;
        break;
      case 3:
        if (is_bytes) request->payload = field.payload;
        break;
      case 4:
        if (field.type == WireType::kVarint) {
          request->timeout_nano = static_cast<std::int64_t>(field.varint);
        }
        break;
      case 5:
        if (is_bytes && !decode_key_value(field.payload, &request->metadata)) return false;
        break;
      default:
        break;
    }
  }
  return !reader.failed();
}

Status decode_response(std::string_view message, std::string* payload) {
  ProtoReader reader(message);
  WireField field;
  std::int32_t code = 0;
  std::string_view text;
  std::string_view body;
  while (reader.next(&field)) {
    if (field.type != WireType::kLengthDelimited) continue;
    if (field.number == 1 && !decode_status(field.payload, &code, &text)) {
      return Status(Code::kInternal, "ttrpc: failed to unmarshal response status");
    }
    if (field.number == 2) body = field.payload;
  }
  if (reader.failed()) return Status(Code::kInternal, "ttrpc: failed to unmarshal response");
  if (code != 0) return Status(static_cast<Code>(code), std::string(text));
  payload->assign(body);
  return Status();
}

Status oversized_status(std::uint64_t length, std::uint32_t limit) {
  return Status(Code::kResourceExhausted,
                fmt::format("message length {} exceed maximum message size of {}", length, limit));
}

Status status_from_current_exception() {
  try {
    throw;
  } catch (const StatusError& error) {
    if (error.status().ok()) return Status(Code::kUnknown, "handler threw an OK status");
    return error.status();
  } catch (const std::exception& error) {
    return Status(Code::kUnknown, error.what());
  } catch (...) {
    return Status(Code::kUnknown, "handler threw a non-standard exception");
  }
}

}  // namespace shim::ttrpc::wire
