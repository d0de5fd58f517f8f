#include "saddlescope/store/csv.h"

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "fault_hooks.h"
#include "saddlescope/base/text.h"
#include "saddlescope/store/files.h"

namespace saddlescope::store {

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

CsvWriter::CsvWriter(std::string path, std::FILE* f, size_t columns)
    : path_(std::move(path)), file_(f, &std::fclose), columns_(columns) {}

Result<CsvWriter> CsvWriter::create(const std::string& path, const std::vector<std::string>& columns) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return Status::Error(path + ": cannot create: " + std::strerror(errno));
  for (size_t i = 0; i < columns.size(); ++i)
    std::fprintf(f, "%s%s", i ? "," : "", columns[i].c_str());
  std::fputc('\n', f);
  return CsvWriter(path, f, columns.size());
}

void CsvWriter::sep() {
  SADDLESCOPE_CHECK(in_row_ < columns_);
  if (in_row_++ > 0) std::fputc(',', file_.get());
}

CsvWriter& CsvWriter::add(int64_t v) {
  sep();
  std::fprintf(file_.get(), "%lld", static_cast<long long>(v));
  return *this;
}

CsvWriter& CsvWriter::add(double v) {
  sep();
  std::fputs(format_double(v).c_str(), file_.get());
  return *this;
}

CsvWriter& CsvWriter::add(const std::string& v) {
  SADDLESCOPE_CHECK(v.find_first_of(",\"\n") == std::string::npos);
  sep();
  std::fputs(v.c_str(), file_.get());
  return *this;
}

void CsvWriter::end_row() {
  SADDLESCOPE_CHECK(in_row_ == columns_);
  std::fputc('\n', file_.get());
  in_row_ = 0;
}

Status CsvWriter::flush() {
  SADDLESCOPE_RETURN_IF_ERROR(injected_write_failure(path_));
  if (std::fflush(file_.get()) != 0 || std::ferror(file_.get()))
    return Status::Error(path_ + ": write failed: " + std::strerror(errno));
  return Status::Ok();
}

Status CsvWriter::rename_to(const std::string& path) {
  SADDLESCOPE_RETURN_IF_ERROR(injected_rename_failure(path));
  if (std::rename(path_.c_str(), path.c_str()) != 0)
    return Status::Error(path + ": cannot replace: " + std::strerror(errno));
  path_ = path;
  return Status::Ok();
}

namespace {

int index_of(const std::vector<std::string>& columns, const std::string& name) {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

int CsvTable::column(const std::string& name) const { return index_of(columns, name); }
int CsvText::column(const std::string& name) const { return index_of(columns, name); }

Result<CsvText> read_csv_text(const std::string& path, bool ignore_torn_last_line) {
  auto file = InputFile::open(path);
  if (!file) return file.status();
  // Read in chunks, a line at a time, so that no line longer than kMaxCsvLineBytes is ever held.
  CsvText t;
  bool have_header = false;
  size_t line_no = 1;
  std::string line;
  auto take_line = [&]() -> Status {
    if (!have_header) {
      if (line.empty()) return Status::Error(path + ": empty file, expected a CSV header");
      t.columns = split(line, ',');
      have_header = true;
    } else {
      std::vector<std::string> f = split(line, ',');
      if (f.size() != t.columns.size())
        return Status::Error(fmt::format("{}:{}: {} fields, expected {}", path, line_no, f.size(), t.columns.size()));
      t.rows.push_back(std::move(f));
    }
    line.clear();
    ++line_no;
    return Status::Ok();
  };
  auto append = [&](const char* p, size_t n) -> Status {
    if (line.size() + n > kMaxCsvLineBytes)
      return Status::Error(fmt::format("{}:{}: line longer than {} bytes: not a CSV table of the run store", path,
                                       line_no, kMaxCsvLineBytes));
    line.append(p, n);
    return Status::Ok();
  };
  std::vector<char> buf(1 << 16);
  for (;;) {
    auto got = file->read_some(buf.data(), buf.size());
    if (!got) return got.status();
    if (*got == 0) break;
    size_t start = 0;
    for (const char* nl; (nl = static_cast<const char*>(std::memchr(buf.data() + start, '\n', *got - start)));) {
      size_t end = static_cast<size_t>(nl - buf.data());
      SADDLESCOPE_RETURN_IF_ERROR(append(buf.data() + start, end - start));
      SADDLESCOPE_RETURN_IF_ERROR(take_line());
      start = end + 1;
    }
    SADDLESCOPE_RETURN_IF_ERROR(append(buf.data() + start, *got - start));
  }
  // A last line without its newline: a row, or a row torn by a killed writer when so told.
  if (!line.empty() && (!ignore_torn_last_line || !have_header)) {
    if (ignore_torn_last_line) return Status::Error(path + ": empty file, expected a CSV header");
    SADDLESCOPE_RETURN_IF_ERROR(take_line());
  }
  if (!have_header) return Status::Error(path + ": empty file, expected a CSV header");
  return t;
}

Result<CsvTable> read_csv(const std::string& path) {
  auto text = read_csv_text(path);
  if (!text) return text.status();
  CsvTable t;
  t.columns = std::move(text->columns);
  for (size_t r = 0; r < text->rows.size(); ++r) {
    std::vector<double> row;
    for (const auto& field : text->rows[r]) {
      char* end = nullptr;
      double v = std::strtod(field.c_str(), &end);
      if (field.empty() || *end != '\0')
        return Status::Error(fmt::format("{}:{}: '{}' is not a number", path, r + 2, printable(field)));
      row.push_back(v);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace saddlescope::store
