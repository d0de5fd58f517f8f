// `store merge` of a foreign study built from the fuzz input: a directory-building harness.
//
// The input is a list of entries, each starting at a line "@@ T PATH[ -> TARGET]":
//   F  a regular file PATH whose content is every byte up to the next "\n@@ " (or the end)
//   D  a directory        L  a symbolic link to TARGET        P  a FIFO
// PATH is relative to the input study (runs/<id>/manifest.json, ...); its components are limited to
// [A-Za-z0-9._-] and ".." is dropped, so the harness itself writes nothing outside its scratch
// directory (an entry below a link is skipped). Link targets are anything: "../../outside", "/etc".
//
// Invariants: no crash or hang, one-line errors; a refused merge leaves OUT as it was (no runs);
// a merge that succeeds leaves OUT holding no link, FIFO or device and no problem `store check` does
// not find in the input too, and merging the same input again adds and renames nothing; the sentinel directory beside
// the input is never written.
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/check.h"
#include "saddlescope/store/merge.h"

using namespace saddlescope;
namespace fs = std::filesystem;

namespace {

// PATH cleaned to safe components, or "" when nothing is left.
std::string clean_path(const std::string& p) {
  std::string out, part;
  auto flush = [&] {
    if (!part.empty() && part != "." && part != "..") out += (out.empty() ? "" : "/") + part;
    part.clear();
  };
  for (char c : p) {
    if (c == '/') flush();
    else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
             c == '-')
      part += c;
  }
  flush();
  return out;
}

// Creates the parents of root/rel as real directories; false when one exists as anything else.
bool make_parents(const std::string& root, const std::string& rel) {
  std::string at = root;
  size_t start = 0;
  for (size_t slash; (slash = rel.find('/', start)) != std::string::npos; start = slash + 1) {
    at += "/" + rel.substr(start, slash - start);
    struct stat st {};
    if (::lstat(at.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) return false;
    } else if (::mkdir(at.c_str(), 0755) != 0) {
      return false;
    }
  }
  return true;
}

void build_tree(const std::string& root, const std::string& input) {
  size_t pos = input.rfind("@@ ", 0) == 0 ? 0 : input.find("\n@@ ");
  while (pos != std::string::npos) {
    size_t head = pos + (input[pos] == '\n' ? 4 : 3);
    size_t eol = input.find('\n', head);
    std::string line = input.substr(head, eol == std::string::npos ? std::string::npos : eol - head);
    size_t next = eol == std::string::npos ? std::string::npos : input.find("\n@@ ", eol);
    std::string content =
        eol == std::string::npos ? "" : input.substr(eol + 1, next == std::string::npos ? std::string::npos : next - eol - 1);
    pos = next;
    if (line.size() < 3 || line[1] != ' ') continue;
    char type = line[0];
    std::string rest = line.substr(2), target;
    if (size_t arrow = rest.find(" -> "); arrow != std::string::npos) {
      target = rest.substr(arrow + 4);
      rest = rest.substr(0, arrow);
    }
    std::string rel = clean_path(rest);
    if (rel.empty() || !make_parents(root, rel)) continue;
    std::string path = root + "/" + rel;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && (type != 'F' || !S_ISREG(st.st_mode))) continue;
    if (type == 'F') fuzz::write_bytes(path, reinterpret_cast<const uint8_t*>(content.data()), content.size());
    else if (type == 'D') ::mkdir(path.c_str(), 0755);
    else if (type == 'L') (void)::symlink(target.c_str(), path.c_str());
    else if (type == 'P') ::mkfifo(path.c_str(), 0644);
  }
}

// Whether anything below `dir` is a link, FIFO, socket or device.
bool holds_special(const std::string& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    auto s = it->symlink_status(ec);
    if (!fs::is_regular_file(s) && !fs::is_directory(s)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string base = fuzz::scratch_dir();
  const std::string in = base + "/study", out = base + "/out", outside = base + "/outside";
  SADDLESCOPE_CHECK(remove_tree(in).ok() && remove_tree(out).ok() && remove_tree(outside).ok());
  fs::create_directories(in);
  fs::create_directories(outside);
  build_tree(in, std::string(reinterpret_cast<const char*>(data), size));

  store::MergeOptions options;
  options.max_file_bytes = 1 << 20;
  auto merged = store::merge_studies(out, {in}, options);
  fuzz::check_one_line(merged.status());
  SADDLESCOPE_CHECK(fs::is_empty(outside));
  if (!merged.ok()) {
    SADDLESCOPE_CHECK(store::list_run_dirs(out).empty());
    return 0;
  }
  if (!fs::exists(out)) {  // nothing to merge: a merge that adds nothing writes nothing (merge.h)
    SADDLESCOPE_CHECK((*merged)[0].added == 0 && (*merged)[0].renamed.empty());
    return 0;
  }
  SADDLESCOPE_CHECK(!holds_special(out + "/runs"));
  // Every problem `store check` finds in OUT was the input's already (a merge copies runs as they are:
  // a completed run without its final snapshot stays one): by file and message, run ids aside.
  auto check = store::check_study(out);
  auto before = store::check_study(in);
  if (!check.ok() || !before.ok()) {
    std::fprintf(stderr, "store check after a merge that succeeded: %s\n",
                 (check.ok() ? before.status() : check.status()).message().c_str());
    std::abort();
  }
  std::set<std::pair<std::string, std::string>> had;
  for (const auto& p : before->problems) had.insert({p.file, p.message});
  for (const auto& p : check->problems) {
    if (!had.count({p.file, p.message})) {
      std::fprintf(stderr, "after merge, not in the input: %s\n", store::describe(p).c_str());
      std::abort();
    }
  }
  auto again = store::merge_studies(out, {in}, options);
  SADDLESCOPE_CHECK(again.ok());
  SADDLESCOPE_CHECK(again->size() == 1 && (*again)[0].added == 0 && (*again)[0].renamed.empty());
  return 0;
}
