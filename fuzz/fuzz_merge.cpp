// `store merge` of a foreign study built from the fuzz input: a directory-building harness.
//
// The input is a directory tree in fuzz_util.h's format (build_tree): entries "@@ F PATH" (a file and
// its content), "@@ D PATH", "@@ L PATH -> TARGET" (a link to anything: "../../outside", "/etc"),
// "@@ P PATH" (a FIFO), PATH relative to the input study (runs/<id>/manifest.json, ...).
//
// Invariants: no crash or hang, one-line errors; a refused merge leaves OUT as it was (no runs);
// a merge that succeeds leaves OUT holding no link, FIFO or device and no problem `store check` does
// not find in the input too, and merging the same input again adds and renames nothing; the sentinel directory beside
// the input is never written.
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/check.h"
#include "saddlescope/store/merge.h"

using namespace saddlescope;
namespace fs = std::filesystem;

namespace {

// Whether anything below `dir` is a link, FIFO, socket or device.
bool holds_special(const std::string& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    auto s = it->symlink_status(ec);
    if (!fs::is_regular_file(s) && !fs::is_directory(s)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string base = fuzz::scratch_dir();
  const std::string in = base + "/study", out = base + "/out", outside = base + "/outside";
  SADDLESCOPE_CHECK(remove_tree(in).ok() && remove_tree(out).ok() && remove_tree(outside).ok());
  fs::create_directories(in);
  fs::create_directories(outside);
  fuzz::build_tree(in, std::string(reinterpret_cast<const char*>(data), size));

  store::MergeOptions options;
  options.max_file_bytes = 1 << 20;
  auto merged = store::merge_studies(out, {in}, options);
  fuzz::check_one_line(merged.status());
  SADDLESCOPE_CHECK(fs::is_empty(outside));
  if (!merged.ok()) {
    SADDLESCOPE_CHECK(store::list_run_dirs(out).empty());
    return 0;
  }
  if (!fs::exists(out)) {  // nothing to merge: a merge that adds nothing writes nothing (merge.h)
    SADDLESCOPE_CHECK((*merged)[0].added == 0 && (*merged)[0].renamed.empty());
    return 0;
  }
  SADDLESCOPE_CHECK(!holds_special(out + "/runs"));
  // Every problem `store check` finds in OUT was the input's already (a merge copies runs as they are:
  // a completed run without its final snapshot stays one): by file and message, run ids aside.
  auto check = store::check_study(out);
  auto before = store::check_study(in);
  if (!check.ok() || !before.ok()) {
    std::fprintf(stderr, "store check after a merge that succeeded: %s\n",
                 (check.ok() ? before.status() : check.status()).message().c_str());
    std::abort();
  }
  std::set<std::pair<std::string, std::string>> had;
  for (const auto& p : before->problems) had.insert({p.file, p.message});
  for (const auto& p : check->problems) {
    if (!had.count({p.file, p.message})) {
      std::fprintf(stderr, "after merge, not in the input: %s\n", store::describe(p).c_str());
      std::abort();
    }
  }
  auto again = store::merge_studies(out, {in}, options);
  SADDLESCOPE_CHECK(again.ok());
  SADDLESCOPE_CHECK(again->size() == 1 && (*again)[0].added == 0 && (*again)[0].renamed.empty());
  return 0;
}
