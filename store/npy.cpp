#include "saddlescope/store/npy.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>

#include "saddlescope/base/memory.h"
#include "saddlescope/base/text.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/sha256.h"

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
      if (!eat(':')) return fail("expected ':' after '" + printable(key) + "'");
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
        return fail("unexpected key '" + printable(key) + "'");
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

Result<NpyArray> read_npy(const std::string& path, std::string* sha256) {
  auto file = InputFile::open(path, memory_limit_bytes(), "this machine's memory: a .npy file is read whole");
  if (!file) return file.status();
  auto bad = [&](const std::string& what) { return Status::Error(path + ": " + what); };
  const uint64_t size = file->size();
  if (size == 0) return bad("empty file, expected a .npy array");
  std::optional<Sha256> digest;
  if (sha256) digest.emplace();
  // Every byte is read through here, in file order, so that the digest is that of the bytes parsed.
  auto read = [&](void* out, size_t n) {
    Status st = file->read(out, n);
    if (st.ok() && digest) digest->update(out, n);
    return st;
  };

  // Magic, version, header length (2 bytes in version 1, 4 in versions 2 and 3), header, data. Sizes are
  // checked against the file's size before anything is allocated for them.
  unsigned char prefix[12];
  const size_t magic_len = static_cast<size_t>(std::min<uint64_t>(size, 10));
  SADDLESCOPE_RETURN_IF_ERROR(read(prefix, magic_len));
  if (magic_len < kMagicLen + 4 || std::memcmp(prefix, kMagic, kMagicLen) != 0)
    return bad("not a .npy file (bad magic)");
  int major = prefix[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = prefix[8] | prefix[9] << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return bad("truncated header");
    SADDLESCOPE_RETURN_IF_ERROR(read(prefix + 10, 2));
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= size_t(prefix[8 + i]) << (8 * i);
    offset = 12;
  } else {
    return bad("unsupported .npy format version " + std::to_string(major));
  }
  if (offset + header_len > size)
    return bad("header length " + std::to_string(header_len) + " exceeds the file size " + std::to_string(size));
  std::string header(header_len, '\0');
  SADDLESCOPE_RETURN_IF_ERROR(read(header.data(), header_len));
  offset += header_len;

  std::string descr;
  bool fortran = false;
  NpyArray a;
  Status st = HeaderParser(header).parse(&descr, &fortran, &a.shape);
  if (!st.ok()) return bad(st.message());
  if (descr == "|u1" || descr == "<u1" || descr == "u1") a.dtype = Dtype::kUInt8;
  else if (descr == "<f4") a.dtype = Dtype::kFloat32;
  else if (descr == "<f8") a.dtype = Dtype::kFloat64;
  else return bad("unsupported dtype '" + printable(descr) + "' (expected uint8, little-endian float32 or float64)");
  if (fortran) return bad("Fortran-order arrays are not supported (save with numpy.ascontiguousarray)");

  // Guard the product against overflow before comparing with the file size.
  int64_t numel = 1;
  for (int64_t d : a.shape) {
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / 8 / d)
      return bad("shape too large");
    numel *= d;
  }
  uint64_t want = static_cast<uint64_t>(numel) * dtype_size(a.dtype);
  uint64_t have = size - offset;
  if (have < want)
    return bad("truncated: shape needs " + std::to_string(want) + " data bytes, file has " +
               std::to_string(have));
  if (have > want)
    return bad(std::to_string(have - want) + " trailing bytes after the data the shape describes");
  a.bytes.resize(want);
  SADDLESCOPE_RETURN_IF_ERROR(read(a.bytes.data(), a.bytes.size()));
  SADDLESCOPE_RETURN_IF_ERROR(file->expect_end());
  if (sha256) *sha256 = digest->hex_digest();
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
