// Combining studies run on different machines into one (`saddlescope store merge OUT DIR...`).
//
// Each input is a study directory (<study>/runs/<run-id>/...); its finished runs are copied into
// OUT/runs/, which is created if missing. A run id already taken in OUT (or earlier in the inputs):
//  - by a run of another environment (manifest `fingerprint`): both are kept; the newcomer is stored as
//    merged_run_id(id, fingerprint), its manifest's run_id rewritten to match;
//  - by a run of the same environment with the same results (run_difference, store/run_scan.h): the
//    newcomer is a duplicate and is not copied;
//  - by a run of the same environment with other results: a conflict, an error naming both runs and
//    the first difference.
// Every merged run's manifest records where it came from (`merged_from`, docs/run-store.md).
//
// Inputs are not trusted: every run is read whole and checked (store/run_scan.h) before anything is
// written. Runs are copied under OUT/runs/.merge.tmp/ and renamed into place at the end, each under
// its RunLock, so that an error or a kill leaves OUT with none of the new runs or with some of them
// complete, never a part of one; the catalogue is then updated. Merging the same inputs again adds
// nothing and writes nothing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

struct MergeOptions {
  uint64_t max_file_bytes = uint64_t{4} << 30;  // a larger file in a run to merge is an error
};

// What a merge did with one input's runs.
struct MergeInputReport {
  std::string study;     // the input, as given
  int added = 0;         // copied under their own id
  int deduplicated = 0;  // already there: same id, same environment, same results
  std::vector<std::pair<std::string, std::string>> renamed;  // (id, the id it was copied under)
};

// "<id>.<first 8 hex digits of SHA-256 of the fingerprint's compact JSON>": a valid run id for a run
// whose id is taken by a run of another environment. The hex digits are the start of the catalogue's
// fingerprint_digest. `id` is cut to 119 characters first, so that the result is at most 128.
// REQUIRES: validate_run_id(id) is ok.
std::string merged_run_id(const std::string& id, const nlohmann::json& fingerprint);

// Merges the finished runs (completed, diverged, failed, interrupted; a stale run as interrupted, the
// way `store check --repair` marks one) of every input into `out`, in the order given, each input's
// runs by id. Returns one report per input. Errors, with nothing written to `out` (one line each):
// an input that is not a study, or is `out` (or holds it in its runs/, or is held in out's runs/); a
// run that does not scan (run_scan.h: hostile names, links, special files, unknown layout or
// versions, a live writer, a file over options.max_file_bytes); a conflict; `out`'s catalogue
// written by a newer saddlescope; another merge into `out` under way; too little free space. A
// failure while copying removes what was copied; a failure to update the catalogue after the runs are
// in place is an error saying so (`saddlescope store index OUT` rebuilds it).
Result<std::vector<MergeInputReport>> merge_studies(const std::string& out, const std::vector<std::string>& inputs,
                                                    const MergeOptions& options = {});

}  // namespace saddlescope::store
