#include "support/io_thread.h"

namespace shim::test {

IoThread::IoThread()
    : work_(boost::asio::make_work_guard(context_)), thread_([this] { context_.run(); }) {}

IoThread::~IoThread() {
  work_.reset();
  context_.stop();
  thread_.join();
}

}  // namespace shim::test
