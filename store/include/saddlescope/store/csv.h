// Append-only CSV tables of the run store (metrics.csv, later curvature.csv, ops.csv).
//
// Numbers are written so that reading them back gives the same bits: integers exactly, doubles in the
// shortest decimal that round-trips ("0.1", "1e-05"), non-finite values as nan/inf/-inf (pandas reads
// them). Equal files therefore mean bitwise-equal values.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::store {

class CsvWriter {
 public:
  // Creates (truncates) `path` and writes the header line. An error names the path.
  static Result<CsvWriter> create(const std::string& path, const std::vector<std::string>& columns);

  CsvWriter& add(int64_t v);
  CsvWriter& add(double v);
  CsvWriter& add(const std::string& v);  // REQUIRES: no comma, quote or newline in v
  // Ends the row. REQUIRES: exactly one value was added per column.
  void end_row();
  // Pushes buffered rows to the file so that a reader (or a crash) sees them. Errors name the file
  // (a full disk, or a failure injected with SADDLESCOPE_FAIL_WRITE: files.h).
  Status flush();
  // Renames the file being written to `path` (atomically replacing it); writing goes on there.
  Status rename_to(const std::string& path);

 private:
  CsvWriter(std::string path, std::FILE* f, size_t columns);
  void sep();

  std::string path_;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  size_t columns_;
  size_t in_row_ = 0;
};

// A CSV file of the run store read back: the header and every row as numbers (nan/inf included).
struct CsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;

  // Index of `name` in columns, or -1.
  int column(const std::string& name) const;
};

// A CSV file of the run store read back as text: the header and every row's fields.
struct CsvText {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;

  // Index of `name` in columns, or -1.
  int column(const std::string& name) const;
};

// The longest line a reader accepts: the run store's rows are a few hundred bytes. A longer line is
// refused when the reader reaches it, before it is held in memory (a file of one 1 GB line costs 1 MiB).
inline constexpr size_t kMaxCsvLineBytes = size_t{1} << 20;

// Reads a CSV written by CsvWriter (fields hold no commas or quotes), a chunk at a time. Errors name
// the file and line: a missing header, a row with the wrong number of fields, a line longer than
// kMaxCsvLineBytes. With `ignore_torn_last_line`, a last line without its newline (a row a killed
// writer left half-written) is not read.
Result<CsvText> read_csv_text(const std::string& path, bool ignore_torn_last_line = false);

// Reads a numeric CSV written by CsvWriter. Errors name the file and line: a row with the wrong number
// of fields, or a field that is not a number.
Result<CsvTable> read_csv(const std::string& path);

// The shortest decimal that reads back as exactly `v`.
std::string format_double(double v);

}  // namespace saddlescope::store
