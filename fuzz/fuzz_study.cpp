// The study reader (study::load_study: TOML, the matrix, every run's config) on arbitrary text.
// Invariants: no crash, one-line errors, at most kMaxStudyRuns runs, distinct run ids.
#include <cstdint>
#include <set>
#include <string>

#include "fuzz_util.h"
#include "saddlescope/study/study.h"

using namespace saddlescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/study.toml";
  fuzz::write_bytes(path, data, size);
  auto s = study::load_study(path, fuzz::scratch_dir() + "/out");
  fuzz::check_one_line(s.status());
  if (!s.ok()) return 0;
  SADDLESCOPE_CHECK(!s->runs.empty() && static_cast<int64_t>(s->runs.size()) <= study::kMaxStudyRuns);
  std::set<std::string> ids;
  for (const auto& r : s->runs) SADDLESCOPE_CHECK(ids.insert(r.run_id).second);
  return 0;
}
