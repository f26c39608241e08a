#include "common/signals.h"

#include <pthread.h>
#include <signal.h>

namespace relay::common {
namespace {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void BlockStopSignals() {
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A write to a peer that has gone is an error to handle, not a reason to
  // die: OpenSSL writes the links' sockets with write(), which would raise it.
  signal(SIGPIPE, SIG_IGN);
}

void WaitForStopSignal() {
  sigset_t set = StopSignals();
  int signal = 0;
  sigwait(&set, &signal);
}

}  // namespace relay::common
