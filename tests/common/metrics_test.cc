#include "common/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace relay::common {
namespace {

using ::testing::HasSubstr;

TEST(HistogramTest, RendersCumulativeBucketsSumAndCount) {
  Histogram h;
  h.Observe(0.0002);  // first bucket
  h.Observe(0.003);   // 0.005
  h.Observe(0.003);
  h.Observe(100);     // +Inf
  MetricsText text;
  text.AddHistogram("relay_x_seconds", "Things.", h);
  std::string out = text.str();
  EXPECT_THAT(out, HasSubstr("# TYPE relay_x_seconds histogram\n"));
  EXPECT_THAT(out, HasSubstr("relay_x_seconds_bucket{le=\"0.0005\"} 1\n"));
  EXPECT_THAT(out, HasSubstr("relay_x_seconds_bucket{le=\"0.0025\"} 1\n"));
  EXPECT_THAT(out, HasSubstr("relay_x_seconds_bucket{le=\"0.005\"} 3\n"));
  EXPECT_THAT(out, HasSubstr("relay_x_seconds_bucket{le=\"30\"} 3\n"));
  EXPECT_THAT(out, HasSubstr("relay_x_seconds_bucket{le=\"+Inf\"} 4\n"));
  EXPECT_THAT(out, HasSubstr("relay_x_seconds_sum 100.00620000"));
  EXPECT_THAT(out, HasSubstr("relay_x_seconds_count 4\n"));
}

TEST(HistogramTest, QuantileIsTheUpperBoundOfItsBucket) {
  Histogram h;
  EXPECT_EQ(h.Quantile(0.99), 0);
  for (int i = 0; i < 99; ++i) {
    h.Observe(0.002);
  }
  h.Observe(0.2);
  EXPECT_EQ(h.Quantile(0.5), 0.0025);
  EXPECT_EQ(h.Quantile(0.99), 0.0025);
  EXPECT_EQ(h.Quantile(1.0), 0.25);
  EXPECT_EQ(h.count(), 100u);
}

TEST(MetricsTextTest, LargeCountersKeepEveryDigit) {
  MetricsText text;
  text.Add("relay_z_total", "Z.", "counter", 123456789012.0);
  text.Add("relay_w", "W.", "gauge", 0.25);
  EXPECT_THAT(text.str(), HasSubstr("relay_z_total 123456789012\n"));
  EXPECT_THAT(text.str(), HasSubstr("relay_w 0.25\n"));
}

TEST(HistogramTest, LabelsComeBeforeTheBound) {
  Histogram h;
  h.Observe(1);
  MetricsText text;
  text.AddHistogram("relay_y_seconds", "Y.", h, "kind=\"a\"");
  EXPECT_THAT(text.str(), HasSubstr("relay_y_seconds_bucket{kind=\"a\",le=\"1\"} 1\n"));
  EXPECT_THAT(text.str(), HasSubstr("relay_y_seconds_count{kind=\"a\"} 1\n"));
}

}  // namespace
}  // namespace relay::common
