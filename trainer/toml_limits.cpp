#include "saddlescope/trainer/toml_limits.h"

namespace saddlescope::trainer {

Status check_toml_nesting(const std::string& text, const std::string& path) {
  // A dotted key is a chain of bare or quoted parts joined by '.', with spaces allowed around the dots.
  // Any other character outside strings and comments ('=', ',', brackets, braces, a newline) ends the
  // chain. A float has one '.', so only a dotted key can make a chain long.
  int dots = 0;
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"' || c == '\'') {
      bool multi = text.compare(i, 3, std::string(3, c)) == 0;
      size_t j = i + (multi ? 3 : 1);
      for (; j < text.size(); ++j) {
        if (c == '"' && text[j] == '\\') { ++j; if (j < text.size() && text[j] == '\n') ++line; continue; }
        if (text[j] == '\n') {
          ++line;
          if (!multi) break;  // an unterminated string: the parser says so
        }
        if (text[j] == c && (!multi || text.compare(j, 3, std::string(3, c)) == 0)) {
          if (multi) j += 2;
          break;
        }
      }
      i = j;
      if (i < text.size() && text[i] == '\n' && !multi) dots = 0;
      continue;
    }
    if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    bool bare = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                c == ' ' || c == '\t';
    if (c == '.') {
      if (++dots >= kMaxTomlKeyParts)
        return Status::Error(path + ":" + std::to_string(line) + ": a dotted key of more than " +
                             std::to_string(kMaxTomlKeyParts) + " parts (tables nested that deep are not a config)");
    } else if (!bare) {
      dots = 0;
    }
    if (c == '\n') ++line;
  }
  return Status::Ok();
}

}  // namespace saddlescope::trainer
