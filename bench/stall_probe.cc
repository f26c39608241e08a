// relay-stallprobe: how often this machine stops a busy core. One thread per core spins on
// the clock for --seconds and counts the gaps in which it did not run at all: on a shared
// virtual machine, the host descheduling that vCPU. A call in flight on a core during such a
// gap waits for it, whatever the server does, so the gaps bound the tail latency any server
// can show here. Prints one JSON line per core.
//   relay-stallprobe --seconds 5
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"

ABSL_FLAG(double, seconds, 5, "how long each core spins");

namespace {

using Clock = std::chrono::steady_clock;

struct Gaps {
  int cpu = 0;
  uint64_t at_least_half_ms = 0;
  uint64_t at_least_1ms = 0;
  uint64_t at_least_2ms = 0;
  double longest_us = 0;
  double total_us = 0;
};

void Spin(int cpu, double seconds, Gaps& gaps) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  gaps.cpu = cpu;
  const Clock::time_point end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(seconds));
  Clock::time_point last = Clock::now();
  while (last < end) {
    Clock::time_point now = Clock::now();
    double gap_us = std::chrono::duration<double, std::micro>(now - last).count();
    if (gap_us >= 500) {
      ++gaps.at_least_half_ms;
      gaps.at_least_1ms += gap_us >= 1000;
      gaps.at_least_2ms += gap_us >= 2000;
      gaps.longest_us = std::max(gaps.longest_us, gap_us);
      gaps.total_us += gap_us;
    }
    last = now;
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Gaps> gaps(cores);
  std::vector<std::thread> threads;
  for (int cpu = 0; cpu < cores; ++cpu) {
    threads.emplace_back(Spin, cpu, seconds, std::ref(gaps[cpu]));
  }
  for (auto& t : threads) {
    t.join();
  }
  for (const Gaps& g : gaps) {
    std::printf(
        "{\"cpu\":%d,\"seconds\":%.1f,\"gaps_half_ms\":%llu,\"gaps_1ms\":%llu,\"gaps_2ms\":%llu,"
        "\"longest_ms\":%.3f,\"lost_ms\":%.1f}\n",
        g.cpu, seconds, static_cast<unsigned long long>(g.at_least_half_ms),
        static_cast<unsigned long long>(g.at_least_1ms),
        static_cast<unsigned long long>(g.at_least_2ms), g.longest_us / 1000, g.total_us / 1000);
  }
  return 0;
}
