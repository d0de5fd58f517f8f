#include "saddlescope/analysis/op_summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>


namespace saddlescope::analysis {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

bool is_measured(const std::string& flag) { return flag == "within" || flag == "beyond"; }

std::vector<OpSummary> summarize_ops(const std::vector<store::OpRow>& rows) {
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::vector<Key> order;
  std::map<Key, std::vector<const store::OpRow*>> groups;
  for (const auto& r : rows) {
    Key key{r.op, r.phase, r.kernel, r.dtype};
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(&r);
  }
  std::vector<OpSummary> out;
  for (const auto& key : order) {
    const auto& g = groups[key];
    OpSummary s;
    std::tie(s.op, s.phase, s.kernel, s.dtype) = key;
    std::vector<double> ulps;
    double max_ratio = kNaN;
    for (const store::OpRow* r : g) {
      if (r->flag == "not_evaluated") {
        s.not_evaluated += r->terms;
        continue;
      }
      ++s.samples;
      if (!is_measured(r->flag)) {
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

namespace {

std::string g(double v) { return std::isnan(v) ? std::string("—") : fmt::format("{:.3g}", v); }

std::string percent(double fraction) {
  return std::isnan(fraction) ? std::string("—") : fmt::format("{:.0f}%", 100 * fraction);
}

}  // namespace

std::string ops_markdown(const std::vector<OpSummary>& summaries) {
  const bool generic = std::any_of(summaries.begin(), summaries.end(), [](const OpSummary& s) { return s.not_evaluated > 0; });
  std::string md = generic ? "| op | phase | kernel |" : "| op | phase |";
  md += " dtype | samples | median \\|ULP\\| | max \\|ULP\\| | beyond bound | of which all terms 0 | max error/bound | "
        "non-finite |";
  md += generic ? " not evaluated (calls) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
                : "\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& s : summaries) {
    md += generic ? fmt::format("| {} | {} | {} |", s.op, s.phase, s.kernel) : fmt::format("| {} | {} |", s.op, s.phase);
    md += fmt::format(" {} | {} | {} | {} | {} ({}) | {} | {} | {} |", s.dtype, s.samples, g(s.median_abs_ulp),
                      g(s.max_abs_ulp), s.beyond, percent(s.fraction_beyond), s.zero_terms, g(s.max_bound_ratio),
                      s.nonfinite);
    md += generic ? fmt::format(" {} |\n", s.not_evaluated) : "\n";
  }
  return md;
}

std::string ops_comparison_markdown(const std::vector<std::string>& labels,
                                    const std::vector<std::vector<OpSummary>>& runs) {
  SADDLESCOPE_CHECK(labels.size() == runs.size());
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::vector<Key> order;
  std::map<Key, std::vector<const OpSummary*>> cells;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const auto& s : runs[r]) {
      Key key{s.op, s.phase, s.dtype, s.kernel};
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
  // An op whose phase ran several kernels (a generic tap's backward) names the kernel of each row.
  std::map<std::tuple<std::string, std::string, std::string>, int> kernels;
  for (const auto& key : order) ++kernels[{std::get<0>(key), std::get<1>(key), std::get<2>(key)}];
  for (const auto& key : order) {
    const bool several = kernels[{std::get<0>(key), std::get<1>(key), std::get<2>(key)}] > 1;
    md += fmt::format("| {} | {} | {} |", several ? std::get<0>(key) + " [" + std::get<3>(key) + "]" : std::get<0>(key),
                      std::get<1>(key), std::get<2>(key));
    for (const OpSummary* s : cells[key])
      md += s ? fmt::format(" {} / {} ({}{}) |", g(s->median_abs_ulp), g(s->max_abs_ulp), percent(s->fraction_beyond),
                            s->zero_terms ? fmt::format("; {} with all terms 0", s->zero_terms) : "")
              : std::string(" — |");
    md += "\n";
  }
  return md;
}

}  // namespace saddlescope::analysis
