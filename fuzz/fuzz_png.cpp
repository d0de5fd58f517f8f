// The PNG decoder (trainer/png.h, CIFAR-10's batches) on arbitrary bytes. Invariants: no crash, no
// allocation beyond what the header declares and the data inflate to, one-line errors, and an image
// that decodes holds exactly width × height × channels samples.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "saddlescope/trainer/png.h"

using namespace saddlescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The decoder holds what the data inflate to (never what the header alone declares); inputs are capped
  if (size > (1 << 18)) return 0;  // zlib inflates at most ~1032:1: at most ~260 MiB
  auto image = trainer::decode_png("fuzz.png", std::string(reinterpret_cast<const char*>(data), size));
  fuzz::check_one_line(image.status());
  if (!image.ok()) return 0;
  SADDLESCOPE_CHECK(image->pixels.size() ==
                    static_cast<size_t>(image->width * image->height * image->channels));
  return 0;
}
