// Small text helpers shared by the parsers of configs, probe specs and CSV files.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace saddlescope {

// The fields of `s` between `sep` characters; "a,,b" gives {"a", "", "b"}, "" gives {""}.
inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i; (i = s.find(sep, start)) != std::string::npos; start = i + 1) parts.push_back(s.substr(start, i - start));
  parts.push_back(s.substr(start));
  return parts;
}

// Whether `s` ends with `suffix` (C++17 has no std::string::ends_with).
inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `text` as one word for a POSIX shell: as it is when it holds only characters no shell treats
// specially, else in single quotes (inside which only the quote itself needs escaping).
inline std::string shell_quote(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-=.,/:%@+") ==
                           std::string::npos)
    return text;
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
// `text` as it may appear inside a one-line message: control characters (a newline, a carriage return,
// an escape) shown as \xNN, and at most `max` characters of it, then "...". For echoing what an
// untrusted file held ("unexpected key '...'") without the file choosing the message's shape or size.
inline std::string printable(const std::string& text, size_t max = 200) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == max) return out + "...";
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    else out += static_cast<char>(c);
  }
  return out;
}

// A whole decimal integer: false for "", "12x", "1.5" or a value outside int64.
inline bool parse_int(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace saddlescope
