// Helpers shared by the fuzz targets: a scratch directory of this process, files written there, and
// the invariant every reader's error must keep (one line: docs/reliability.md).
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
