// `saddlescope report` (reports::write_report) of a study built from the fuzz input: its
// analysis/analysis.json and the run directories it names (manifest.json, metrics.csv, curvature.csv,
// ops.csv, symmetry.csv), in fuzz_util.h's directory format ("@@ F analysis/analysis.json", ...).
// gnuplot is a stub that writes a small SVG and PNG, so the figures' scripts and CSV files are made but
// not drawn (drawing is the app tests').
//
// Invariants: no crash, hang or sanitizer report; an error is one line that names a file or a figure,
// and leaves the report and its temporary directory as the input had them (none, a link, a killed
// writer's); a report that is written leaves no temporary directory and holds index.html,
// report.md, a report.json that parses and every file report.json lists for its figures; either way
// the study's own files are as they were, and nothing is written outside the study (a sentinel
// directory beside it, "../outside" to a link of the input, stays empty).
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "saddlescope/reports/report.h"
#include "saddlescope/store/files.h"

using namespace saddlescope;
namespace fs = std::filesystem;

namespace {

// Every regular file below `dir` but the report's: relative path -> content.
std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), dir).string();
    if (rel == "report" || rel == ".report.tmp") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && !it->is_symlink()) {
      auto bytes = store::read_file(it->path().string());
      out[rel] = bytes ? *bytes : "unreadable: " + bytes.status().message();
    }
  }
  return out;
}

// What is at `path`, to compare: "" (nothing), a link and its target, or a file's or a directory's
// contents (lstat: links not followed).
std::string entry(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    return "link " + fs::read_symlink(path, ec).string();
  }
  if (S_ISREG(st.st_mode)) {
    auto bytes = store::read_file(path);
    return "file " + (bytes ? *bytes : bytes.status().message());
  }
  if (!S_ISDIR(st.st_mode)) return "special";
  std::string out = "dir";
  for (const auto& [rel, bytes] : files_of(path)) out += "\n" + rel + " " + bytes;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string study = fuzz::scratch_dir() + "/study", outside = fuzz::scratch_dir() + "/outside";
  SADDLESCOPE_CHECK(remove_tree(study).ok() && remove_tree(outside).ok());
  fs::create_directories(study + "/runs");
  fs::create_directories(outside);
  fuzz::build_tree(study, std::string(reinterpret_cast<const char*>(data), size));
  const auto before = files_of(study);
  // The input may hold a report, or a temporary directory of a killed writer (or links in their place).
  const std::string report_before = entry(study + "/report"), tmp_before = entry(study + "/.report.tmp");

  reports::ReportOptions options;
  options.gnuplot = fuzz::stub_gnuplot();
  options.study_name = "fuzz";
  auto r = reports::write_report(study, options);
  fuzz::check_one_line(r.status());
  const std::string tmp_after = entry(study + "/.report.tmp");
  if (!r.ok()) {
    const std::string& m = r.status().message();
    SADDLESCOPE_CHECK(m.rfind(study + "/", 0) == 0 || m.rfind("figure ", 0) == 0);
    SADDLESCOPE_CHECK(entry(study + "/report") == report_before);
    SADDLESCOPE_CHECK(tmp_after.empty() || tmp_after == tmp_before);  // refused before it began: untouched
  } else {
    SADDLESCOPE_CHECK(tmp_after.empty());
    for (const char* f : {"index.html", "report.md"}) SADDLESCOPE_CHECK(fs::is_regular_file(study + "/report/" + f));
    auto text = store::read_file(study + "/report/report.json");
    SADDLESCOPE_CHECK(text.ok());
    const auto model = nlohmann::json::parse(*text, nullptr, false);
    SADDLESCOPE_CHECK(model.is_object() && model.at("figures").is_array());
    SADDLESCOPE_CHECK(static_cast<int64_t>(model.at("figures").size()) == r->figures);
    for (const auto& f : model.at("figures"))
      for (const auto& file : f.at("files"))
        SADDLESCOPE_CHECK(fs::is_regular_file(study + "/report/figures/" + file.get<std::string>()));
  }
  SADDLESCOPE_CHECK(fs::is_empty(outside));
  if (files_of(study) != before) {
    std::fprintf(stderr, "the report changed the study's own files\n");
    std::abort();
  }
  return 0;
}
