#include "saddlescope/probes/op_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "saddlescope/store/csv.h"
#include "saddlescope/store/files.h"

namespace saddlescope::probes {

const std::vector<std::string> kOpsColumns = {"step",      "op",    "phase", "index",  "observed",
                                              "exact",     "ulp_error", "bound", "bound_ratio", "call",
                                              "kernel",    "dtype", "terms", "flag"};

const std::vector<std::string> kOpsSummaryColumns = {
    "op",       "phase",  "kernel",         "dtype",       "samples",         "measured",
    "beyond",   "fraction_beyond", "median_abs_ulp", "max_abs_ulp", "max_bound_ratio", "nonfinite",
    "zero_terms"};

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool measured(const std::string& flag) { return flag == "within" || flag == "beyond"; }

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

const char* flag_of(const reference::ErrorReport& r) {
  switch (r.outcome) {
    case reference::Outcome::kMeasured: return r.matches ? "within" : "beyond";
    case reference::Outcome::kNonFiniteInput: return r.matches ? "nonfinite_input" : "nonfinite_input_mismatch";
    case reference::Outcome::kNonFiniteObserved: return r.matches ? "overflow" : "nonfinite_observed";
  }
  return "?";
}

std::vector<OpSummary> summarize_ops(const std::vector<OpRow>& rows) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::vector<Key> order;
  std::map<Key, std::vector<const OpRow*>> groups;
  for (const auto& r : rows) {
    Key key{r.op, r.phase, r.dtype};
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(&r);
  }
  std::vector<OpSummary> out;
  for (const auto& key : order) {
    const auto& g = groups[key];
    OpSummary s;
    std::tie(s.op, s.phase, s.dtype) = key;
    s.kernel = g.front()->kernel;
    s.samples = static_cast<int64_t>(g.size());
    std::vector<double> ulps;
    double max_ratio = kNaN;
    for (const OpRow* r : g) {
      if (!measured(r->flag)) {
        ++s.nonfinite;
        continue;
      }
      ++s.measured;
      s.beyond += r->flag == "beyond";
      s.zero_terms += r->flag == "beyond" && std::isinf(r->bound_ratio);  // error > 0 = bound
      ulps.push_back(std::fabs(r->ulp_error));
      max_ratio = std::isnan(max_ratio) ? r->bound_ratio : std::max(max_ratio, r->bound_ratio);
    }
    s.median_abs_ulp = median(ulps);
    s.max_abs_ulp = ulps.empty() ? kNaN : *std::max_element(ulps.begin(), ulps.end());
    s.fraction_beyond = s.measured ? static_cast<double>(s.beyond) / static_cast<double>(s.measured) : kNaN;
    s.max_bound_ratio = max_ratio;
    out.push_back(s);
  }
  return out;
}

Result<std::vector<OpRow>> read_ops_csv(const std::string& path) {
  auto t = store::read_csv_text(path);
  if (!t) return t.status();
  std::map<std::string, int> at;
  for (const char* name : {"step", "op", "phase", "kernel", "dtype", "flag", "ulp_error", "bound_ratio"}) {
    at[name] = t->column(name);
    if (at[name] < 0) return Status::Error(path + ": no column '" + name + "' (not an ops.csv?)");
  }
  std::vector<OpRow> rows;
  for (size_t i = 0; i < t->rows.size(); ++i) {
    const auto& f = t->rows[i];
    auto number = [&](const char* name, double* out) {
      const std::string& s = f[static_cast<size_t>(at[name])];
      char* end = nullptr;
      *out = std::strtod(s.c_str(), &end);
      return !s.empty() && *end == '\0';
    };
    OpRow r;
    double step = 0;
    if (!number("step", &step) || !number("ulp_error", &r.ulp_error) || !number("bound_ratio", &r.bound_ratio))
      return Status::Error(fmt::format("{}:{}: step, ulp_error and bound_ratio must be numbers", path, i + 2));
    r.step = static_cast<int64_t>(step);
    r.op = f[static_cast<size_t>(at["op"])];
    r.phase = f[static_cast<size_t>(at["phase"])];
    r.kernel = f[static_cast<size_t>(at["kernel"])];
    r.dtype = f[static_cast<size_t>(at["dtype"])];
    r.flag = f[static_cast<size_t>(at["flag"])];
    rows.push_back(std::move(r));
  }
  return rows;
}

Status write_ops_summary(const std::string& path, const std::vector<OpSummary>& summaries) {
  std::string csv;
  for (size_t i = 0; i < kOpsSummaryColumns.size(); ++i) csv += (i ? "," : "") + kOpsSummaryColumns[i];
  csv += "\n";
  for (const auto& s : summaries)
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", s.op, s.phase, s.kernel, s.dtype, s.samples,
                       s.measured, s.beyond, store::format_double(s.fraction_beyond),
                       store::format_double(s.median_abs_ulp), store::format_double(s.max_abs_ulp),
                       store::format_double(s.max_bound_ratio), s.nonfinite, s.zero_terms);
  return store::write_file_atomic(path, csv);
}

namespace {

std::string g(double v) { return std::isnan(v) ? std::string("—") : fmt::format("{:.3g}", v); }

std::string percent(double fraction) {
  return std::isnan(fraction) ? std::string("—") : fmt::format("{:.0f}%", 100 * fraction);
}

}  // namespace

std::string ops_markdown(const std::vector<OpSummary>& summaries) {
  std::string md =
      "| op | phase | dtype | samples | median \\|ULP\\| | max \\|ULP\\| | beyond bound | of which all terms 0 | "
      "max error/bound | non-finite |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& s : summaries)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} |\n", s.op, s.phase, s.dtype, s.samples,
                      g(s.median_abs_ulp), g(s.max_abs_ulp), s.beyond, percent(s.fraction_beyond), s.zero_terms,
                      g(s.max_bound_ratio), s.nonfinite);
  return md;
}

std::string ops_comparison_markdown(const std::vector<std::string>& labels,
                                    const std::vector<std::vector<OpSummary>>& runs) {
  SADDLESCOPE_CHECK(labels.size() == runs.size());
  using Key = std::tuple<std::string, std::string, std::string>;
  std::vector<Key> order;
  std::map<Key, std::vector<const OpSummary*>> cells;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const auto& s : runs[r]) {
      Key key{s.op, s.phase, s.dtype};
      auto [it, fresh] = cells.try_emplace(key, std::vector<const OpSummary*>(runs.size(), nullptr));
      if (fresh) order.push_back(key);
      it->second[r] = &s;
    }
  std::string md = "| op | phase | dtype |", rule = "|---|---|---|";
  for (const auto& l : labels) {
    md += " " + l + " |";
    rule += "---|";
  }
  md += "\n" + rule + "\n";
  for (const auto& key : order) {
    md += fmt::format("| {} | {} | {} |", std::get<0>(key), std::get<1>(key), std::get<2>(key));
    for (const OpSummary* s : cells[key])
      md += s ? fmt::format(" {} / {} ({}{}) |", g(s->median_abs_ulp), g(s->max_abs_ulp), percent(s->fraction_beyond),
                            s->zero_terms ? fmt::format("; {} with all terms 0", s->zero_terms) : "")
              : std::string(" — |");
    md += "\n";
  }
  return md;
}

}  // namespace saddlescope::probes
