// The manifest reader (store::read_manifest: JSON, then RunManifest::from_json) on arbitrary bytes.
// Invariants: no crash, one-line errors; a manifest that reads is written back (to_json) and reads
// again as the same manifest.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "saddlescope/store/run_dir.h"

using namespace saddlescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = fuzz::scratch_dir();
  fuzz::write_bytes(dir + "/manifest.json", data, size);
  auto m = store::read_manifest(dir);
  fuzz::check_one_line(m.status());
  if (!m.ok()) return 0;
  nlohmann::json j = m->to_json();
  auto again = store::RunManifest::from_json(j, "again");
  if (!again.ok()) {
    std::fprintf(stderr, "a manifest that read does not read back: %s\n", again.status().message().c_str());
    std::abort();
  }
  SADDLESCOPE_CHECK(again->to_json() == j);
  return 0;
}
