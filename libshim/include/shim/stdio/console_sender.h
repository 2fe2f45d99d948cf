// The runtime's end of a console socket (runc's --console-socket; libshim's receiving
// end is shim/stdio/console_socket.h): connect once, send one message whose payload is
// the pty's name and whose SCM_RIGHTS carries the pty master, close. libshim hands the
// socket's path to an Instance as ProcessStdio::console_socket.
//
// Threading: any thread (a pool thread: it blocks on the connect and the send).
#pragma once

#include <string>
#include <string_view>

#include "shim/status.h"

namespace shim {

// Sends `fd` (a pty master; the caller keeps its own copy and closes it afterwards) to
// the console socket at `socket_path`, with `name` (e.g. Pty::name(); "pty" if empty:
// a stream socket carries an fd only with at least one byte) as the payload. Errors name
// the socket ("connect to console socket /run/.../pty.sock: ...").
Status send_console(const std::string& socket_path, int fd, std::string_view name);

}  // namespace shim
