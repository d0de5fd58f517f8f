// Helpers shared by the fuzz targets: a scratch directory of this process, files written there, a
// stand-in for gnuplot, a directory tree built from an input, and the invariant every reader's error
// must keep (one line: docs/reliability.md).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "saddlescope/base/remove_tree.h"
#include "saddlescope/base/status.h"

namespace saddlescope::fuzz {

// A directory of this process under $TMPDIR (or /tmp), made once and removed at exit. The name is
// never freed: the atexit handler runs after the destructors of statics made later (ASan caught a
// use after free when it was a static std::string).
inline const std::string& scratch_dir() {
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    auto* templ = new std::string(std::string(tmp && *tmp ? tmp : "/tmp") + "/saddlescope-fuzz-XXXXXX");
    char* made = ::mkdtemp(templ->data());
    SADDLESCOPE_CHECK(made != nullptr);
    std::atexit([] { (void)remove_tree(scratch_dir()); });
    return templ;
  }();
  return *dir;
}

// `path` (created or truncated) holding `size` bytes of `data`.
inline void write_bytes(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  SADDLESCOPE_CHECK(f != nullptr);
  SADDLESCOPE_CHECK(size == 0 || std::fwrite(data, 1, size, f) == size);
  SADDLESCOPE_CHECK(std::fclose(f) == 0);
}

// A stand-in for gnuplot in the report harnesses (made once, in the scratch directory):
// gnuplot -c NAME.gp NAME.svg NAME.png DATA.csv...: the same 140-byte SVG as both images.
inline const std::string& stub_gnuplot() {
  static const std::string* path = [] {
    auto* p = new std::string(scratch_dir() + "/gnuplot");
    const std::string script =
        "#!/bin/sh\nsvg='<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"plot\"><g id=\"gnuplot_plot_1\">"
        "<path d=\"M0 0L1 1\"/></g><use href=\"#plot\"/></svg>'\nprintf '%s\\n' \"$svg\" >\"$3\" && "
        "printf '%s\\n' \"$svg\" >\"$4\"\n";
    write_bytes(*p, reinterpret_cast<const uint8_t*>(script.data()), script.size());
    SADDLESCOPE_CHECK(::chmod(p->c_str(), 0755) == 0);
    return p;
  }();
  return *path;
}

// PATH cleaned to safe components, or "" when nothing is left.
inline std::string clean_path(const std::string& p) {
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
inline bool make_parents(const std::string& root, const std::string& rel) {
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

// The directory tree an input describes, built under `root` (which exists): a list of entries, each
// starting at a line "@@ T PATH[ -> TARGET]":
//   F  a regular file PATH whose content is every byte up to the next "\n@@ " (or the end)
//   D  a directory        L  a symbolic link to TARGET        P  a FIFO
// PATH's components are limited to [A-Za-z0-9._-] and ".." is dropped, so the harness itself writes
// nothing outside `root` (an entry below a link, or over an existing entry of another kind, is skipped). Link targets
// are anything. fuzz/make_seeds.cpp writes a real study in this format.
inline void build_tree(const std::string& root, const std::string& input) {
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
    if (type == 'F') write_bytes(path, reinterpret_cast<const uint8_t*>(content.data()), content.size());
    else if (type == 'D') ::mkdir(path.c_str(), 0755);
    else if (type == 'L') (void)::symlink(target.c_str(), path.c_str());
    else if (type == 'P') ::mkfifo(path.c_str(), 0644);
  }
}

// A reader's error is one line, never empty (an error at an input boundary names the file and what
// was expected, on one line: docs/design.md). Aborts (a finding) otherwise.
inline void check_one_line(const Status& st) {
  if (st.ok()) return;
  const std::string& m = st.message();
  if (m.empty() || m.find('\n') != std::string::npos) {
    std::fprintf(stderr, "error message is not one line: [%s]\n", m.c_str());
    std::abort();
  }
}

}  // namespace saddlescope::fuzz
