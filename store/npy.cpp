#include "saddlescope/store/npy.h"

#include <cctype>
#include <cstring>
#include <limits>

#include "saddlescope/store/files.h"

namespace saddlescope::store {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// A strict reader of the Python dict literal in a .npy header.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& s) : s_(s) {}

  Status parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip();
    if (!eat('{')) return fail("expected '{'");
    for (;;) {
      skip();
      if (eat('}')) break;
      std::string key;
      SADDLESCOPE_RETURN_IF_ERROR(quoted(&key));
      skip();
      if (!eat(':')) return fail("expected ':' after '" + key + "'");
      skip();
      if (key == "descr") {
        SADDLESCOPE_RETURN_IF_ERROR(quoted(descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        if (word("True")) *fortran = true;
        else if (word("False")) *fortran = false;
        else return fail("fortran_order must be True or False");
        have_fortran = true;
      } else if (key == "shape") {
        SADDLESCOPE_RETURN_IF_ERROR(tuple(shape));
        have_shape = true;
      } else {
        return fail("unexpected key '" + key + "'");
      }
      skip();
      if (eat(',')) continue;
      skip();
      if (eat('}')) break;
      return fail("expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape)
      return Status::Error("header lacks one of 'descr', 'fortran_order', 'shape'");
    return Status::Ok();
  }

 private:
  void skip() { while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_; }
  bool eat(char c) { if (i_ < s_.size() && s_[i_] == c) { ++i_; return true; } return false; }
  bool word(const char* w) {
    size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  Status fail(const std::string& what) const {
    return Status::Error("malformed header at byte " + std::to_string(i_) + ": " + what);
  }
  Status quoted(std::string* out) {
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return fail("expected a quoted string");
    char q = s_[i_++];
    size_t end = s_.find(q, i_);
    if (end == std::string::npos) return fail("unterminated string");
    *out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return Status::Ok();
  }
  Status tuple(std::vector<int64_t>* out) {
    out->clear();
    if (!eat('(')) return fail("shape must be a tuple");
    for (;;) {
      skip();
      if (eat(')')) return Status::Ok();
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_])))
        return fail("shape entries must be non-negative integers");
      int64_t v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return fail("shape entry too large");
        v = v * 10 + (s_[i_++] - '0');
      }
      out->push_back(v);
      skip();
      if (eat(',')) continue;
      skip();
      if (eat(')')) return Status::Ok();
      return fail("expected ',' or ')' in shape");
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

int dtype_size(Dtype d) {
  switch (d) {
    case Dtype::kUInt8: return 1;
    case Dtype::kFloat32: return 4;
    case Dtype::kFloat64: return 8;
  }
  return 0;
}

const char* dtype_descr(Dtype d) {
  switch (d) {
    case Dtype::kUInt8: return "|u1";
    case Dtype::kFloat32: return "<f4";
    case Dtype::kFloat64: return "<f8";
  }
  return "?";
}

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<NpyArray> read_npy(const std::string& path) {
  auto file = read_file(path);
  if (!file) return file.status();
  const std::string& b = *file;
  auto bad = [&](const std::string& what) { return Status::Error(path + ": " + what); };
  if (b.empty()) return bad("empty file, expected a .npy array");
  if (b.size() < kMagicLen + 4 || b.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    return bad("not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(b[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<unsigned char>(b[8]) | static_cast<unsigned char>(b[9]) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) return bad("truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= size_t(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    offset = 12;
  } else {
    return bad("unsupported .npy format version " + std::to_string(major));
  }
  if (offset + header_len > b.size())
    return bad("header length " + std::to_string(header_len) + " exceeds the file size " +
               std::to_string(b.size()));
  std::string header = b.substr(offset, header_len);
  offset += header_len;

  std::string descr;
  bool fortran = false;
  NpyArray a;
  Status st = HeaderParser(header).parse(&descr, &fortran, &a.shape);
  if (!st.ok()) return bad(st.message());
  if (descr == "|u1" || descr == "<u1" || descr == "u1") a.dtype = Dtype::kUInt8;
  else if (descr == "<f4") a.dtype = Dtype::kFloat32;
  else if (descr == "<f8") a.dtype = Dtype::kFloat64;
  else return bad("unsupported dtype '" + descr + "' (expected uint8, little-endian float32 or float64)");
  if (fortran) return bad("Fortran-order arrays are not supported (save with numpy.ascontiguousarray)");

  // Guard the product against overflow before comparing with the file size.
  int64_t numel = 1;
  for (int64_t d : a.shape) {
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / 8 / d)
      return bad("shape too large");
    numel *= d;
  }
  uint64_t want = static_cast<uint64_t>(numel) * dtype_size(a.dtype);
  uint64_t have = b.size() - offset;
  if (have < want)
    return bad("truncated: shape needs " + std::to_string(want) + " data bytes, file has " +
               std::to_string(have));
  if (have > want)
    return bad(std::to_string(have - want) + " trailing bytes after the data the shape describes");
  a.bytes.assign(b.begin() + static_cast<std::ptrdiff_t>(offset), b.end());
  return a;
}

Status write_npy(const std::string& path, Dtype dtype, const std::vector<int64_t>& shape,
                 const void* data) {
  std::string dims;  // Python tuple syntax: "()", "(3,)", "(3, 4)"
  int64_t numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(shape[i]);
    numel *= shape[i];
  }
  if (shape.size() == 1) dims += ",";
  std::string header = std::string("{'descr': '") + dtype_descr(dtype) +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  size_t total = kMagicLen + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(data), static_cast<size_t>(numel) * dtype_size(dtype));
  return write_file_atomic(path, out);
}

}  // namespace saddlescope::store
