#include "saddlescope/analysis/noise_budget.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace saddlescope::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

store::NoiseRow row(int64_t step, double rounding, double sampling, double lambda_min = kNaN,
                    double rounding_vmin = kNaN, double sampling_vmin = kNaN) {
  store::NoiseRow r;
  r.step = step;
  r.batch = 4;
  r.examples = 8;
  r.grad_norm = 1;
  r.rounding_norm = rounding;
  r.rounding_relative = rounding;
  r.sampling_norm = sampling;
  r.ratio = rounding / sampling;
  r.lambda_min = lambda_min;
  r.rounding_vmin = rounding_vmin;
  r.sampling_vmin = sampling_vmin;
  return r;
}

// Worked by hand: λmin = −2, η = 0.1, L = 4, f = 0.25: R = √(2·0.25·4/2) = 1, and 1 + η|λmin| = 1.2.
TEST(NoiseBudget, EscapeStepsAreTheTheoryChecksFormula) {
  EXPECT_NEAR(escape_steps(-2, 0.1, 4, 0.25, 1e-3), std::log(1e3) / std::log(1.2), 1e-12);
  EXPECT_EQ(escape_steps(-2, 0.1, 4, 0.25, 2.0), 0.0) << "a kick past R escapes at once";
  EXPECT_TRUE(std::isnan(escape_steps(2, 0.1, 4, 0.25, 1e-3))) << "no negative curvature, no escape";
  EXPECT_TRUE(std::isnan(escape_steps(-2, 0.1, 4, 0.25, 0))) << "no kick (rounding exactly 0)";
  EXPECT_TRUE(std::isnan(escape_steps(-2, kNaN, 4, 0.25, 1e-3))) << "no learning rate at that step";
}

TEST(NoiseBudget, VerdictsPerGroupWithTheirEvidence) {
  NoiseRun small{"a1", "small", {row(0, 1e-9, 1e-3), row(10, 2e-9, 1e-3, -2, 1e-10, 1e-4)}, {{0, 0.1}, {10, 0.1}},
                 {{10, 4.0}}};
  NoiseRun large{"b1", "large", {row(0, 1e-9, 1e-3), row(10, 5e-5, 1e-3)}, {}, {}};
  NoiseRun full{"c1", "full-batch", {row(0, 0, 0), row(10, 1e-9, 0)}, {}, {}};
  NoiseRun none{"d1", "unprobed", {}, {}, {}};
  const auto j = noise_budget({small, large, full, none}, 0.25);
  EXPECT_EQ(j["negligible_ratio"], kNegligibleNoiseRatio);
  ASSERT_EQ(j["groups"].size(), 3u) << "a group without noise rows is left out";
  ASSERT_EQ(j["rows"].size(), 6u);

  const auto& f = j["groups"][0];  // groups in name order: full-batch, large, small
  EXPECT_EQ(f["group"], "full-batch");
  EXPECT_EQ(f["verdict"], "not negligible") << "rounding with no sampling noise at all";
  EXPECT_EQ(f["undefined_rows"], 1);
  EXPECT_EQ(f["no_sampling_noise_rows"], 1);
  EXPECT_EQ(f["evidence"].get<std::string>().find("; 1 steps undefined") != std::string::npos, true) << f["evidence"];

  const auto& l = j["groups"][1];
  EXPECT_EQ(l["verdict"], "not negligible");
  EXPECT_EQ(l["not_negligible_rows"], 1);
  EXPECT_NE(l["evidence"].get<std::string>().find("≥ 0.01 at 1 steps (first at step 10)"), std::string::npos)
      << l["evidence"];
  EXPECT_DOUBLE_EQ(l["ratio"]["max"].get<double>(), 0.05);

  const auto& s = j["groups"][2];
  EXPECT_EQ(s["verdict"], "negligible");
  EXPECT_EQ(s["negligible_rows"], 2);
  EXPECT_DOUBLE_EQ(s["ratio"]["median"].get<double>(), 1.5e-6);
  // Rows in group order, then run, then step. Step 10 of a1: R = 1, r0 = η·1e-10 and η·1e-4.
  const auto& r = j["rows"][5];
  EXPECT_EQ(r["run_id"], "a1");
  EXPECT_NEAR(r["escape_steps_rounding"].get<double>(), std::log(1e11) / std::log(1.2), 1e-9);
  EXPECT_NEAR(r["escape_steps_sampling"].get<double>(), std::log(1e5) / std::log(1.2), 1e-9);
  EXPECT_TRUE(j["rows"][4]["escape_steps_rounding"].is_null()) << "no λmin at step 0";
  EXPECT_EQ(s["escape_steps_rounding"]["n"], 1);
  EXPECT_DOUBLE_EQ(r["ratio_vmin"].get<double>(), 1e-6);
  EXPECT_EQ(s["ratio_vmin"]["n"], 1) << "only the step with v_min";

  EXPECT_TRUE(noise_budget({}, 0.25)["groups"].empty());
}

}  // namespace
}  // namespace saddlescope::analysis
