// A CSV table of the run store, declared once and used by both its writer and its reader.
//
// A Table<Row> names the file, its schema version and its columns, each column bound to a member of
// the row struct. TableWriter<Row> writes rows through it; read_table<Row> reads them back through it,
// refusing a header that is not exactly the declared one. So a column cannot be renamed, reordered or
// reinterpreted on one side only. The tables themselves are declared in schema.h.
//
// Values round-trip bitwise (csv.h): integers exactly, doubles in the shortest decimal, non-finite
// values as nan/inf/-inf; bools as 0/1. A last line without its newline is a row torn by a killed
// writer: readers ignore it, and a resumed writer cuts it off.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/base/text.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/store/files.h"

namespace saddlescope::store {

template <class Row>
struct Table {
  using Member = std::variant<int64_t Row::*, double Row::*, std::string Row::*, bool Row::*>;
  struct Column {
    const char* name;
    Member member;
    bool timing = false;  // a wall-clock measurement: not reproducible, so not part of a run's result
  };
  const char* file;  // file name inside the run directory, e.g. "metrics.csv"
  int version;       // schema version, recorded in the manifest's "files"
  std::vector<Column> columns;

  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const auto& c : columns) n.push_back(c.name);
    return n;
  }
};

template <class Row>
Result<std::vector<Row>> read_table(const std::string& run_dir, const Table<Row>& table);

template <class Row>
class TableWriter {
 public:
  // Creates (truncates) <run_dir>/<table.file> and writes the header. Errors name the file.
  static Result<TableWriter> create(const std::string& run_dir, const Table<Row>& table) {
    auto csv = CsvWriter::create(run_dir + "/" + table.file, table.names());
    if (!csv) return csv.status();
    return TableWriter(table, std::move(*csv));
  }

  // Reopens <run_dir>/<table.file> for a run resumed before step `before_step`: keeps the header and
  // the rows of earlier steps (rows written after the checkpoint the run resumes from are dropped, and
  // so is a torn last line), rewritten atomically, then appends. A missing file is created. Errors
  // name the file. REQUIRES: Row has a `step`.
  static Result<TableWriter> resume(const std::string& run_dir, const Table<Row>& table, int64_t before_step) {
    std::string path = run_dir + "/" + table.file;
    std::vector<Row> kept;
    if (file_exists(path)) {
      auto rows = read_table(run_dir, table);
      if (!rows) return rows.status();
      for (const Row& r : *rows)
        if (r.step < before_step) kept.push_back(r);
    }
    auto csv = CsvWriter::create(path + ".resume", table.names());
    if (!csv) return csv.status();
    TableWriter w(table, std::move(*csv));
    for (const Row& r : kept) w.append(r);
    SADDLESCOPE_RETURN_IF_ERROR(w.csv_.flush());
    SADDLESCOPE_RETURN_IF_ERROR(w.csv_.rename_to(path));
    return w;
  }

  // A run's table: created afresh when `resume_from` < 0, else resume(run_dir, table, resume_from).
  static Result<TableWriter> open(const std::string& run_dir, const Table<Row>& table, int64_t resume_from) {
    return resume_from < 0 ? create(run_dir, table) : resume(run_dir, table, resume_from);
  }

  void append(const Row& r) {
    for (const auto& c : table_->columns)
      std::visit([&](auto m) { add(r.*m); }, c.member);
    csv_.end_row();
  }

  // Pushes the rows to the file (a reader, or a crash, then sees them). Errors name the file.
  Status flush() { return csv_.flush(); }

 private:
  TableWriter(const Table<Row>& table, CsvWriter csv) : table_(&table), csv_(std::move(csv)) {}
  void add(int64_t v) { csv_.add(v); }
  void add(double v) { csv_.add(v); }
  void add(const std::string& v) { csv_.add(v); }
  void add(bool v) { csv_.add(int64_t{v}); }

  const Table<Row>* table_;  // REQUIRES: outlives the writer (the tables in schema.h are static)
  CsvWriter csv_;
};

// Parses one CSV row's fields into `row` by the table's columns. Errors name file:line and column.
template <class Row>
Status parse_row(const Table<Row>& table, const std::vector<std::string>& fields, const std::string& path,
                 size_t line, Row* row) {
  for (size_t i = 0; i < table.columns.size(); ++i) {
    const std::string& s = fields[i];
    const char* name = table.columns[i].name;
    auto bad = [&](const char* expected) {
      return Status::Error(path + ":" + std::to_string(line) + ": column " + name + " must be " + expected +
                           ", got '" + printable(s) + "'");
    };
    char* end = nullptr;
    Status st;
    std::visit(
        [&](auto m) {
          using T = std::decay_t<decltype(row->*m)>;
          if constexpr (std::is_same_v<T, std::string>) {
            // The writer cannot write a quote (CsvWriter::add): a field holding one is not ours.
            if (s.find('"') != std::string::npos) st = bad("text without '\"'");
            row->*m = s;
          } else if constexpr (std::is_same_v<T, double>) {
            errno = 0;
            double v = std::strtod(s.c_str(), &end);
            if (s.empty() || *end != '\0') st = bad("a number");
            row->*m = v;
          } else {
            errno = 0;
            long long v = std::strtoll(s.c_str(), &end, 10);
            if (s.empty() || *end != '\0' || errno == ERANGE) st = bad("an integer");
            if constexpr (std::is_same_v<T, bool>) {
              if (st.ok() && v != 0 && v != 1) st = bad("0 or 1");
              row->*m = v == 1;
            } else {
              row->*m = static_cast<int64_t>(v);
            }
          }
        },
        table.columns[i].member);
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

// Reads <run_dir>/<table.file>: the header must be exactly the table's columns. Errors name the file
// (missing, wrong header with the expected one) or file:line and column (a malformed value).
template <class Row>
Result<std::vector<Row>> read_table(const std::string& run_dir, const Table<Row>& table) {
  std::string path = run_dir + "/" + table.file;
  auto text = read_csv_text(path, /*ignore_torn_last_line=*/true);
  if (!text) return text.status();
  if (text->columns != table.names()) {
    std::string want;
    for (const auto& n : table.names()) want += (want.empty() ? "" : ",") + n;
    return Status::Error(path + ": header is not that of " + table.file + " version " +
                         std::to_string(table.version) + " (expected " + want + ")");
  }
  std::vector<Row> rows(text->rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    SADDLESCOPE_RETURN_IF_ERROR(parse_row(table, text->rows[i], path, i + 2, &rows[i]));
  return rows;
}

}  // namespace saddlescope::store
