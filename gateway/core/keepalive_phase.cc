#include "gateway/core/keepalive_phase.h"

#include <algorithm>
#include <random>

namespace relay::gateway {

std::chrono::milliseconds KeepAlivePhase::First(std::chrono::milliseconds period, double draw) {
  // The offset truncates, so the first tick never passes the period.
  const auto half = period / 2;
  return half + std::chrono::duration_cast<std::chrono::milliseconds>((period - half) *
                                                                      std::clamp(draw, 0.0, 1.0));
}

std::chrono::milliseconds KeepAlivePhase::First(std::chrono::milliseconds period) {
  thread_local std::minstd_rand generator(std::random_device{}());
  return First(period, std::uniform_real_distribution<double>(0.0, 1.0)(generator));
}

}  // namespace relay::gateway
