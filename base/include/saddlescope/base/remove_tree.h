// Removing a directory tree.
//
// Not std::filesystem::remove_all: PyTorch's LibTorch 2.x wheels export their own copy of it from
// libtorch.so, which interposes the C++ library's in any program linking torch and calls through a
// null pointer (seen on the H200 host with LibTorch 2.11). Every module uses this instead.
#pragma once

#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope {

// Removes `path` and everything below it, without following symbolic links. A missing path is ok.
// An error names the entry that could not be removed.
Status remove_tree(const std::string& path);

}  // namespace saddlescope
