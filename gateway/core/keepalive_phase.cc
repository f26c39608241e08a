#include "gateway/core/keepalive_phase.h"

#include <algorithm>
#include <random>

namespace relay::gateway {

std::chrono::milliseconds KeepAlivePhase::First(std::chrono::milliseconds period, double draw) {
  const auto half = period / 2;
  const auto offset = std::chrono::milliseconds(
      static_cast<std::chrono::milliseconds::rep>(static_cast<double>((period - half).count()) *
                                                  std::clamp(draw, 0.0, 1.0)));
  return std::min(period, half + offset);
}

std::chrono::milliseconds KeepAlivePhase::First(std::chrono::milliseconds period) {
  thread_local std::minstd_rand generator(std::random_device{}());
  return First(period, std::uniform_real_distribution<double>(0.0, 1.0)(generator));
}

}  // namespace relay::gateway
