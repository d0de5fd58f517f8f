// The batch-invariance table: one row per `saddlescope invariance --json` result.
#include "saddlescope/reports/invariance.h"

#include "model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "saddlescope/store/files.h"
#include "saddlescope/store/json_input.h"

namespace saddlescope::reports {
namespace {

using nlohmann::json;
using store::field;

std::string stem_of(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  return name;
}

// A number that may be null (not finite when written): null reads as infinity, the largest difference.
double or_inf(const json& v) { return v.is_number() ? v.get<double>() : INFINITY; }

// The row of one result; its time ratio is set by the caller.
Result<InvarianceRow> row_of(const std::string& path) {
  auto text = store::read_file(path);
  if (!text) return text.status();
  auto parsed = store::parse_json(*text, path);
  if (!parsed) return parsed.status();
  const json& r = *parsed;
  const json& cases = field(r, "cases");
  const json& seconds = field(r, "seconds");
  if (!cases.is_array() || cases.empty() || !seconds.is_array() || seconds.empty())
    return Status::Error(path + ": not an invariance result (expected `cases` and `seconds`, as "
                                "`saddlescope invariance --json` writes)");
  InvarianceRow row;
  const std::string stem = stem_of(path);
  const size_t a = stem.find('-'), b = a == std::string::npos ? a : stem.find('-', a + 1);
  if (b != std::string::npos) {
    row.model = stem.substr(0, a), row.device = stem.substr(a + 1, b - a - 1), row.config = stem.substr(b + 1);
  } else {
    row.model = field(r, "model").is_string() ? field(r, "model").get<std::string>() : "?";
    row.device = field(r, "device").is_string() ? field(r, "device").get<std::string>() : "?";
    row.config = stem;
  }
  row.invariant = field(r, "invariant").is_boolean() && field(r, "invariant").get<bool>();
  row.cases = static_cast<int64_t>(cases.size());
  // The first ops by how many cases name them, ties in order of first appearance.
  std::vector<std::pair<std::string, int64_t>> firsts;
  bool any_grad = false;
  double grad = 0;
  for (const auto& c : cases) {
    if (field(c, "equal") == field(c, "examples")) ++row.cases_equal;
    row.max_ulp = std::max(row.max_ulp, or_inf(field(c, "max_ulp")));
    row.max_relative = std::max(row.max_relative, or_inf(field(c, "max_relative")));
    if (const json& g = field(field(c, "input_grad"), "max_relative"); !g.is_null()) {
      any_grad = true;
      grad = std::max(grad, or_inf(g));
    }
    const json& op = field(c, "first_op");
    if (!op.is_object()) continue;
    auto str = [&](const char* k) { return field(op, k).is_string() ? field(op, k).get<std::string>() : ""; };
    const std::string bound = str("bound");
    const std::string key = fmt::format("`{}` {} {}", str("op"), str("phase"), str("how")) + "\x1f" +
                            (bound.empty() ? "" : ", " + bound + " bound");
    auto it = std::find_if(firsts.begin(), firsts.end(), [&](const auto& f) { return f.first == key; });
    if (it == firsts.end()) firsts.emplace_back(key, 1);
    else ++it->second;
  }
  if (any_grad) row.input_grad_max_relative = grad;
  std::stable_sort(firsts.begin(), firsts.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  for (size_t i = 0; i < std::min<size_t>(2, firsts.size()); ++i) {
    const std::string& k = firsts[i].first;
    const size_t sep = k.find('\x1f');
    row.first_ops += (i ? "; " : "") + k.substr(0, sep) + fmt::format(" ({})", firsts[i].second) + k.substr(sep + 1);
  }
  const json* largest = nullptr;
  for (const auto& t : seconds)
    if (field(t, "batch").is_number_integer() && (!largest || t.at("batch").get<int64_t>() > largest->at("batch").get<int64_t>()))
      largest = &t;
  if (!largest || !field(*largest, "median").is_number())
    return Status::Error(path + ": not an invariance result (`seconds` has no batch with a median time)");
  row.batch = largest->at("batch").get<int64_t>();
  row.ms_min = or_inf(field(*largest, "min")) * 1e3;
  row.ms_median = largest->at("median").get<double>() * 1e3;
  row.ms_max = or_inf(field(*largest, "max")) * 1e3;
  return row;
}

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

Result<std::vector<InvarianceRow>> read_invariance(const std::vector<std::string>& paths) {
  std::vector<InvarianceRow> rows;
  std::map<std::pair<std::string, std::string>, double> first;
  for (const auto& path : paths) {
    auto row = row_of(path);
    if (!row) return row.status();
    const double base = first.emplace(std::make_pair(row->model, row->device), row->ms_median).first->second;
    row->time_ratio = row->ms_median / base;
    rows.push_back(std::move(*row));
  }
  return rows;
}

std::string invariance_markdown(const std::vector<InvarianceRow>& rows) {
  std::string out =
      "| model | device | config | invariant | cases equal | max ULP | max relative | input gradient max relative | "
      "first op that differs (cases) | ms per evaluation at batch: median (min–max) | time vs first config |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows)
    out += fmt::format("| {} | {} | {} | {} | {}/{} | {:g} | {:.3g} | {} | {} | {}: {:.3g} ({:.3g}–{:.3g}) | {:.2f} |\n",
                       r.model, r.device, r.config, r.invariant ? "yes" : "no", r.cases_equal, r.cases, r.max_ulp,
                       r.max_relative,
                       r.input_grad_max_relative ? fmt::format("{:.3g}", *r.input_grad_max_relative) : "—",
                       r.first_ops.empty() ? "—" : r.first_ops, r.batch, r.ms_median, r.ms_min, r.ms_max, r.time_ratio);
  return out;
}

json invariance_rows(const std::vector<InvarianceRow>& rows) {
  json out = json::array();
  for (const auto& r : rows)
    out.push_back({{"model", r.model}, {"device", r.device}, {"config", r.config}, {"invariant", r.invariant},
                   {"cases_equal", r.cases_equal}, {"cases", r.cases}, {"max_ulp", number(r.max_ulp)},
                   {"max_relative", number(r.max_relative)},
                   {"input_grad_max_relative",
                    r.input_grad_max_relative ? number(*r.input_grad_max_relative) : json(nullptr)},
                   {"first_ops", r.first_ops}, {"batch", r.batch},
                   {"ms", {{"min", number(r.ms_min)}, {"median", number(r.ms_median)}, {"max", number(r.ms_max)}}},
                   {"time_ratio", number(r.time_ratio)}});
  return out;
}

std::string invariance_json(const std::vector<InvarianceRow>& rows) { return invariance_rows(rows).dump(1) + "\n"; }

Result<json> invariance_model(const std::string& study_dir) {
  const std::string dir = study_dir + "/invariance";
  std::vector<std::string> paths;
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".json" && e.is_regular_file()) paths.push_back(e.path().string());
    if (ec) return Status::Error(dir + ": cannot list: " + ec.message());
  }
  std::sort(paths.begin(), paths.end());
  auto rows = read_invariance(paths);
  if (!rows) return rows.status();
  return json{{"rows", invariance_rows(*rows)}};
}

}  // namespace saddlescope::reports
