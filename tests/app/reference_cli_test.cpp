// End-to-end tests of `saddlescope reference dot|sum`: the JSON it prints, and the one-line errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/store/npy.h"
#include "command.h"
#include "temp_dir.h"

namespace saddlescope {
namespace {

using testing::expect_error;
using testing::Output;
using testing::run;

// Runs `args`, expects success and returns the parsed JSON.
nlohmann::json run_json(const std::string& args) {
  Output o = run(args);
  EXPECT_EQ(o.code, 0) << args << "\n" << o.text;
  auto j = nlohmann::json::parse(o.text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << o.text;
  return j;
}

std::string write_f32(const testing::TempDir& dir, const std::string& name, const std::vector<float>& v) {
  EXPECT_TRUE(store::write_npy(dir.file(name), store::Dtype::kFloat32, {static_cast<int64_t>(v.size())},
                               v.data()).ok());
  return dir.file(name);
}

std::string write_f64(const testing::TempDir& dir, const std::string& name, const std::vector<double>& v) {
  EXPECT_TRUE(store::write_npy(dir.file(name), store::Dtype::kFloat64, {static_cast<int64_t>(v.size())},
                               v.data()).ok());
  return dir.file(name);
}

std::string hex(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

TEST(ReferenceCli, DotPrintsEveryDigitRoundingsAndUlpErrors) {
  testing::TempDir dir;
  const std::string a = write_f32(dir, "a.npy", {0.1f, 3.0f}), b = write_f32(dir, "b.npy", {0.1f, -1.0f});
  auto j = run_json("reference dot " + a + " " + b);
  EXPECT_EQ(j["op"], "dot");
  EXPECT_EQ(j["dtype"], "float32");
  EXPECT_EQ(j["n"], 2);
  EXPECT_EQ(j["kind"], "finite");
  EXPECT_TRUE(j["first_nonfinite"].is_null());
  EXPECT_EQ(j["exact"], "-2.989999999701976773902600825749686919152736663818359375");
  const double exact = -2.989999999701976773902600825749686919152736663818359375;
  EXPECT_EQ(j["float64"], hex(exact));
  EXPECT_EQ(j["float32"], hex(static_cast<float>(exact)));
  const float naive = 0.1f * 0.1f + 3.0f * -1.0f;
  EXPECT_EQ(j["naive"]["value"], hex(naive));
  EXPECT_EQ(j["naive"]["format"], "float32");
  EXPECT_EQ(j["naive"]["outcome"], "measured");
  EXPECT_TRUE(j["naive"]["within_bound"].get<bool>());
  EXPECT_FALSE(j.contains("observed"));
  EXPECT_EQ(j["inputs"], nlohmann::json::array({a, b}));

  // --observed: the same numbers for the value passed in; 5 ULPs off is beyond gamma_2 · sum|a_i b_i|.
  auto same = run_json("reference dot " + a + " " + b + " --observed " + hex(naive));
  EXPECT_EQ(same["observed"]["ulp_error"], j["naive"]["ulp_error"]);
  float off = static_cast<float>(exact);
  for (int i = 0; i < 5; ++i) off = std::nextafter(off, 0.0f);
  auto wrong = run_json("reference dot " + a + " " + b + " --observed " + hex(off));
  EXPECT_NEAR(wrong["observed"]["ulp_error"].get<double>(), 5.0, 0.5);  // toward 0 from a negative value
  EXPECT_FALSE(wrong["observed"]["within_bound"].get<bool>());
  EXPECT_GT(wrong["observed"]["bound_ratio"].get<double>(), 1.0);
}

TEST(ReferenceCli, SumIsExactWhereFloatArithmeticIsNot) {
  testing::TempDir dir;
  const std::string a = write_f64(dir, "a.npy", {1e300, 1.0, -1e300});
  auto j = run_json("reference sum " + a + " --observed 0x0p+0");
  EXPECT_EQ(j["op"], "sum");
  EXPECT_EQ(j["dtype"], "float64");
  EXPECT_EQ(j["exact"], "1");
  EXPECT_EQ(j["float64"], "0x1p+0");
  EXPECT_EQ(j["naive"]["value"], "0x0p+0");
  EXPECT_EQ(j["observed"]["format"], "float64");
  EXPECT_EQ(j["observed"]["ulp_error"].get<double>(), -std::ldexp(1.0, 52));
  EXPECT_EQ(j["observed"]["rel_error"].get<double>(), -1.0);
  EXPECT_TRUE(j["observed"]["within_bound"].get<bool>()) << "gamma_3 · 2e300 dwarfs the error";
}

TEST(ReferenceCli, NonFiniteAndEmptyInputsAreExplicitResults) {
  testing::TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto j = run_json("reference sum " + write_f32(dir, "n.npy", {1, nan, 2}) + " --observed nan");
  EXPECT_EQ(j["kind"], "nan");
  EXPECT_EQ(j["exact"], "nan");
  EXPECT_EQ(j["first_nonfinite"], 1);
  EXPECT_EQ(j["float32"], "nan");
  EXPECT_EQ(j["naive"]["outcome"], "nonfinite_input");
  EXPECT_TRUE(j["naive"]["ulp_error"].is_null()) << "no huge fake error";
  EXPECT_TRUE(j["observed"]["within_bound"].get<bool>()) << "NaN is what IEEE arithmetic gives";
  auto i = run_json("reference dot " + write_f32(dir, "i.npy", {1, inf}) + " " + write_f32(dir, "o.npy", {1, -2}));
  EXPECT_EQ(i["kind"], "-inf");
  EXPECT_EQ(i["float64"], "-inf");
  auto e = run_json("reference sum " + write_f32(dir, "e.npy", {}));
  EXPECT_EQ(e["n"], 0);
  EXPECT_EQ(e["exact"], "0");
  EXPECT_EQ(e["naive"]["ulp_error"], 0.0);
  auto big = run_json("reference sum " + write_f32(dir, "big.npy", {3e38f, 3e38f}) + " --observed inf");
  EXPECT_EQ(big["kind"], "finite");
  EXPECT_EQ(big["float32"], "inf");  // the exact 6e38 overflows float32: inf is the correct rounding
  EXPECT_EQ(big["observed"]["outcome"], "nonfinite_observed");
  EXPECT_TRUE(big["observed"]["within_bound"].get<bool>());
}

TEST(ReferenceCli, BadInputsAreOneLineErrors) {
  testing::TempDir dir;
  const std::string a = write_f32(dir, "a.npy", {1, 2, 3}), b = write_f32(dir, "b.npy", {1, 2});
  expect_error("reference dot " + a + " " + b,
               "reference dot: lengths differ: " + a + " has 3 elements, " + b + " has 2");
  const std::string d = write_f64(dir, "d.npy", {1, 2, 3});
  expect_error("reference dot " + a + " " + d,
               "reference dot: dtypes differ: " + a + " is float32, " + d + " is float64");
  const float m[4] = {1, 2, 3, 4};
  ASSERT_TRUE(store::write_npy(dir.file("m.npy"), store::Dtype::kFloat32, {2, 2}, m).ok());
  expect_error("reference sum " + dir.file("m.npy"), dir.file("m.npy") + ": expected a 1-D array, found shape (2, 2)");
  const uint8_t u[2] = {1, 2};
  ASSERT_TRUE(store::write_npy(dir.file("u.npy"), store::Dtype::kUInt8, {2}, u).ok());
  expect_error("reference sum " + dir.file("u.npy"), dir.file("u.npy") + ": expected a float32 or float64 array, found uint8");
  expect_error("reference sum " + a + " --observed 0x1.8p-3junk",
               "--observed: expected a number such as 0x1.8p-3, got '0x1.8p-3junk'");
  expect_error("reference sum " + a + " --observed 0.1",
               "--observed: 0.1 is not exactly a float32 value (the inputs are float32); give the kernel's result, "
               "e.g. float(np.float32(x)).hex()");
  // Malformed and missing files: the reader's message, which names the file, on one line.
  for (const std::string& path : {dir.write("bad.npy", "not an npy file"), dir.file("absent.npy")}) {
    Output o = run("reference sum " + path);
    EXPECT_EQ(o.code, 1) << o.text;
    EXPECT_EQ(o.text.rfind("saddlescope: " + path, 0), 0u) << o.text;
    EXPECT_EQ(o.text.find('\n'), o.text.size() - 1) << o.text;
  }
  EXPECT_NE(run("reference dot " + a).code, 0);  // B is required
}

}  // namespace
}  // namespace saddlescope
