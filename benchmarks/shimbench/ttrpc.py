"""A minimal blocking ttrpc client: enough to call a shim the way containerd does.

Frame: 10-byte big-endian header (payload length, stream id, type, flags), then a
protobuf Request {service=1, method=2, payload=3, timeout_nano=4} or Response
{status=1 {code=1, message=2}, payload=2}. Only what the shim-start measurement needs.
"""
import socket
import struct

REQUEST, RESPONSE = 1, 2
TASK_SERVICE = "containerd.task.v2.Task"


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_bytes(number, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(number << 3 | 2) + varint(len(data)) + data


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def parse_fields(data):
    """{field number: [value, ...]}; varints as int, length-delimited as bytes."""
    fields = {}
    i = 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, i = _read_varint(data, i)
        elif wire_type == 2:
            length, i = _read_varint(data, i)
            value, i = data[i:i + length], i + length
        elif wire_type == 1:
            value, i = data[i:i + 8], i + 8
        elif wire_type == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        fields.setdefault(number, []).append(value)
    return fields


def _read_varint(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


class TtrpcError(Exception):
    pass


class Client:
    def __init__(self, address, timeout=10.0):
        path = address[len("unix://"):] if address.startswith("unix://") else "\0" + address
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self._sock.settimeout(timeout)
        self._sock.connect(path)
        self._next_stream = 1

    def close(self):
        self._sock.close()

    def call(self, method, payload, service=TASK_SERVICE):
        """Sends one request and returns the response payload; TtrpcError on a status."""
        stream = self._next_stream
        self._next_stream += 2
        message = field_bytes(1, service) + field_bytes(2, method) + field_bytes(3, payload)
        self._sock.sendall(struct.pack(">IIBB", len(message), stream, REQUEST, 0) + message)
        while True:
            length, got_stream, kind, _ = struct.unpack(">IIBB", self._read_exactly(10))
            body = self._read_exactly(length)
            if kind == RESPONSE and got_stream == stream:
                break
        fields = parse_fields(body)
        if 1 in fields:
            status = parse_fields(fields[1][0])
            code = status.get(1, [0])[0]
            if code != 0:
                text = status.get(2, [b""])[0].decode(errors="replace")
                raise TtrpcError(f"{method}: code {code}: {text}")
        return fields.get(2, [b""])[0]

    def _read_exactly(self, size):
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self._sock.recv(size - len(chunks))
            if not chunk:
                raise TtrpcError("connection closed")
            chunks += chunk
        return bytes(chunks)
