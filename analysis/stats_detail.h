// Helpers the statistics' files share (stats.cpp, paired.cpp); not part of the module's interface.
#pragma once

#include <utility>
#include <vector>

#include "saddlescope/analysis/stats.h"

namespace saddlescope::analysis::detail {

// The median of v (the mean of the two middle values when n is even); reorders v. REQUIRES: non-empty.
double median_in_place(std::vector<double>& v);
// Its median or mean; reorders v. REQUIRES: non-empty.
double location(std::vector<double>& v, Location which);
// Midranks of sorted (value, flagged) pairs: the sum of the flagged ones' midranks, and Σ(t³ − t) over
// groups of t tied values (the variance correction of both rank tests). REQUIRES: sorted by value.
struct RankSums {
  double flagged = 0, ties = 0;
};
RankSums flagged_rank_sum(const std::vector<std::pair<double, bool>>& sorted);
// The two-sided p of an exact test: `counts[s]` is how many of the equally likely arrangements give the
// statistic s (0, 1, ...), and `observed` the statistic seen; p = 2·min(P(S ≤ observed), P(S ≥ observed)),
// at most 1.
double two_sided_exact_p(const std::vector<double>& counts, double observed);
// Checks that v is non-empty and every value finite (a broken REQUIRES aborts).
void check_sample(const std::vector<double>& v);

}  // namespace saddlescope::analysis::detail
