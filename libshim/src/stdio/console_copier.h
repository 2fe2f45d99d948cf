// ConsoleCopier: the copies of a terminal process, through its pty master, on the event
// loop: stdin FIFO -> master, and master -> stdout (FIFO, file or a logger's pipe).
//
// One registration of the master serves both directions (epoll takes an fd once), so
// this is not two StreamCopiers. Everything goes through read/write with non-blocking
// fds: splice(2) does not work on ptys. Reading a master whose slave side is closed by
// everyone gives EIO, which is the terminal's EOF; the kernel hands out what the slave
// wrote before that.
//
// A process can exit while a child of it still holds the slave: drain() (at the exit)
// ends the output copy once the master has nothing more to read, as the Go shim does when
// its process exits. hang_up() is the Go shim's reaction to the end of stdin: the master
// is closed (after what is buffered went out), so the process gets SIGHUP.
//
// Loop-only, except create(). The master stays open until cancel() or hang_up(), so
// resizing a process whose copy has ended still works.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "shim/status.h"
#include "stdio/stdio_fd.h"
#include "stdio/stream_copier.h"

namespace shim::upgrade {
class CarriedFds;
}  // namespace shim::upgrade

namespace shim::stdio {

class ConsoleCopier : public std::enable_shared_from_this<ConsoleCopier> {
 public:
  using DoneHandler = std::function<void(const CopyResult&)>;

  // Takes `master` (made non-blocking and registered with the loop). Nothing is copied
  // before start_input()/start_output().
  static shim::Status create(boost::asio::any_io_executor executor, Fd master,
                             std::shared_ptr<ConsoleCopier>* copier);

  // `input` (a non-blocking FIFO reader) -> master, until EOF or an error; then `done`
  // (on the loop, never after cancel()). At most once.
  void start_input(Fd input, DoneHandler done);
  // master -> `target` until the master's EOF (EIO), or, after drain(), until it has
  // nothing to read; then `done`. A FIFO or pipe target is waited on when full, a file is
  // written directly; a target without fd drops the bytes (counted). At most once.
  void start_output(CopyTarget target, DoneHandler done);

  // The process exited: the input copy stops now (no handler); the output copy ends the
  // first time the master has nothing to read, after a short grace for bytes the kernel
  // is still moving from the slave.
  void drain();
  // Stdin ended: stop the input, drain the output without grace, then close the master.
  void hang_up();

  // TIOCSWINSZ on the master. OK without effect once the master is closed.
  shim::Status resize(std::uint16_t width, std::uint16_t height);

  // Stops both copies (no handlers run) and closes every fd, the master included.
  // Idempotent.
  void cancel();

  // Live upgrade (stdio/terminal_upgrade.cpp), as StreamCopier's: save_for_upgrade()
  // notes both legs (their fds, the bytes in hand, counters, where each is) without
  // changing anything; resume() makes the copier it described on duplicates of the fds
  // (*carried), with the legs' handlers given again; running legs go on once the loop runs.
  shim::Status save_for_upgrade(boost::json::object* state, std::vector<int>* fds);
  static shim::Status resume(boost::asio::any_io_executor executor, const boost::json::value& saved,
                             upgrade::CarriedFds* carried, DoneHandler input_done,
                             DoneHandler output_done, std::shared_ptr<ConsoleCopier>* copier);

  std::uint64_t input_bytes() const { return input_.bytes; }
  std::uint64_t output_bytes() const { return output_.bytes; }
  bool master_open() const { return master_.is_open(); }

  // Public for make_shared; use create().
  explicit ConsoleCopier(boost::asio::any_io_executor executor);

 private:
  // One direction of the copy. `source`/`target` point at descriptors owned here; a null
  // `target_waiter` means the target never blocks (a file) or there is none.
  struct Leg {
    const char* name = "";
    boost::asio::posix::stream_descriptor* source = nullptr;
    boost::asio::posix::stream_descriptor* target_waiter = nullptr;
    int target_fd = -1;
    bool source_is_master = false;
    bool active = false;
    bool waiting_source = false;
    bool waiting_target = false;
    bool end_when_idle = false;  // drain(): "nothing to read" is the end
    std::uint64_t bytes = 0;
    std::vector<char> buffer;
    std::size_t begin = 0;
    std::size_t end = 0;
    DoneHandler done;
  };
  enum class Step { kProgress, kEof, kWaitSource, kWaitTarget, kError };

  static boost::json::object save_leg(const Leg& leg);
  static shim::Status resume_leg(const boost::json::value& saved, const char* where, Leg* leg,
                                 bool* running);
  // The output's target (and keeper): registered for write waits when it can be full.
  void attach_output(std::shared_ptr<Fd> target, Fd keeper);

  static constexpr std::size_t kBufferSize = 32 * 1024;

  void pump(Leg& leg);
  Step step(Leg& leg, shim::Status* error);
  void wait(Leg& leg, Step blocked);
  void finish(Leg& leg, shim::Status status);
  void stop_input();
  void close_master();
  void kick_output();

  boost::asio::any_io_executor executor_;
  boost::asio::posix::stream_descriptor master_;
  boost::asio::posix::stream_descriptor input_source_;
  boost::asio::posix::stream_descriptor output_waiter_;  // borrows output_target_'s fd
  std::shared_ptr<Fd> output_target_;
  Fd output_keeper_;
  boost::asio::steady_timer drain_timer_;
  Leg input_;
  Leg output_;
  bool close_master_after_output_ = false;
  bool cancelled_ = false;
};

}  // namespace shim::stdio
