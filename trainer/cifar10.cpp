#include "saddlescope/trainer/cifar10.h"

#include <filesystem>

#include "saddlescope/trainer/data_package.h"
#include "saddlescope/trainer/png.h"

namespace saddlescope::trainer {

Result<std::vector<uint8_t>> parse_cifar10_labels(const std::string& path, const std::string& text, int64_t count) {
  std::vector<uint8_t> labels;
  labels.reserve(static_cast<size_t>(count));
  size_t i = 0;
  auto at = [&](const std::string& what) {
    return Status::Error(path + ": byte " + std::to_string(i) + ": expected " + what + " (a JSON array of " +
                         std::to_string(count) + " labels 0 to 9)");
  };
  if (text.empty() || text[0] != '[') return at("'['");
  for (i = 1;; ++i) {
    if (i >= text.size() || text[i] < '0' || text[i] > '9') return at("a label");
    if (i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '9') { ++i; return at("a label 0 to 9"); }
    labels.push_back(static_cast<uint8_t>(text[i] - '0'));
    ++i;
    if (i < text.size() && text[i] == ']') break;
    if (i >= text.size() || text[i] != ',') return at("',' or ']'");
  }
  if (i + 1 != text.size()) { ++i; return at("the end after ']'"); }
  if (static_cast<int64_t>(labels.size()) != count)
    return Status::Error(path + ": " + std::to_string(labels.size()) + " labels, expected " + std::to_string(count));
  return labels;
}

Result<Cifar10Split> read_cifar10(const std::string& data_dir, const std::string& split, int64_t n,
                                  std::map<std::string, std::string>* digests) {
  const bool train = split == "train";
  if (!train && split != "test") return Status::Error("cifar10: split must be train or test, got '" + split + "'");
  const int64_t total = train ? kCifar10Train : kCifar10Test;
  if (n < 1 || n > total)
    return Status::Error("cifar10: " + std::to_string(n) + " " + split + " images asked for; it holds " +
                         std::to_string(total));
  const DataPackage& p = cifar10_package();
  const std::string label_file = train ? "train_lables.json" : "test_lables.json";
  auto label_text = read_package_file(p, data_dir, label_file, digests);
  if (!label_text) return label_text.status();
  auto labels = parse_cifar10_labels((std::filesystem::path(data_dir) / p.dataset / label_file).string(), *label_text, total);
  if (!labels) return labels.status();

  Cifar10Split s;
  s.n = n;
  s.labels.assign(labels->begin(), labels->begin() + n);
  s.pixels.resize(static_cast<size_t>(n) * 3 * 1024);
  for (int64_t first = 0, batch = 1; first < n; first += kCifar10Batch, ++batch) {
    const std::string name = train ? "data_batch_" + std::to_string(batch) + ".png" : "test_batch.png";
    const std::string path = (std::filesystem::path(data_dir) / p.dataset / name).string();
    auto bytes = read_package_file(p, data_dir, name, digests);
    if (!bytes) return bytes.status();
    auto image = decode_png(path, *bytes);
    if (!image) return image.status();
    if (image->width != 1024 || image->height != kCifar10Batch || image->channels != 3)
      return Status::Error(path + ": " + std::to_string(image->width) + "x" + std::to_string(image->height) + "x" +
                           std::to_string(image->channels) + " PNG; expected 1024x10000 RGB, an image per row");
    // Row r is image first + r, its 1,024 pixels (32 rows of 32) as R, G, B triples: to channels first.
    const int64_t rows = std::min(kCifar10Batch, n - first);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* in = image->pixels.data() + r * 3072;
      uint8_t* out = s.pixels.data() + (first + r) * 3072;
      for (int64_t px = 0; px < 1024; ++px)
        for (int64_t c = 0; c < 3; ++c) out[c * 1024 + px] = in[px * 3 + c];
    }
  }
  return s;
}

}  // namespace saddlescope::trainer
