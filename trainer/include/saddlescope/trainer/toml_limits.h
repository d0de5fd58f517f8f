// A bound on TOML nesting that the TOML library (toml++ 3) does not keep itself. It limits arrays and
// inline tables to 256 levels, but a dotted key (a.b.c... = 1) or table header ([a.b.c...]) of any
// length makes tables nested that deep, and building or freeing those recurses once per level: a
// 500 KB key of 250,000 parts overflowed the stack (found by the nesting test of tests/trainer/config_test.cpp,
// docs/reliability.md). Configs and studies check their text with this before parsing it.
#pragma once

#include <string>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

// The most parts a dotted key or table header may have: real configs and studies use 2.
inline constexpr int kMaxTomlKeyParts = 64;

// Ok unless `text`, the contents of `path`, holds a dotted key or table header of more than
// kMaxTomlKeyParts parts. The error names file and line:
//   "<path>:<line>: a dotted key of more than 64 parts (tables nested that deep are not a config)"
// Strings and comments are skipped; anything else malformed is left to the TOML parser.
Status check_toml_nesting(const std::string& text, const std::string& path);

}  // namespace saddlescope::trainer
