// The run config's TOML reader (trainer::ConfigBuilder::load_toml, then resolve) on arbitrary text.
// Invariants: no crash, one-line errors naming the file.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "saddlescope/trainer/config.h"

using namespace saddlescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/run.toml";
  fuzz::write_bytes(path, data, size);
  trainer::ConfigBuilder b;
  Status st = b.load_toml(path);
  fuzz::check_one_line(st);
  if (!st.ok()) {
    SADDLESCOPE_CHECK(st.message().find(path) != std::string::npos);
    return 0;
  }
  auto cfg = b.resolve();
  fuzz::check_one_line(cfg.status());
  return 0;
}
