// The run store's CSV tables (store/table.h read_table, for every table of schema.h; and the untyped
// read_csv) on arbitrary bytes. The first byte picks the table, the rest is the file.
// Invariants: no crash, one-line errors; rows that read are written back by TableWriter and read
// again as the same text (values round-trip bitwise).
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/schema.h"

using namespace saddlescope;

namespace {

template <class Row>
void round_trip(const std::string& dir, const store::Table<Row>& table, const uint8_t* data, size_t size) {
  const std::string path = dir + "/" + table.file;
  fuzz::write_bytes(path, data, size);
  auto rows = store::read_table(dir, table);
  fuzz::check_one_line(rows.status());
  if (!rows.ok()) return;
  std::string texts[2];
  for (std::string& text : texts) {
    auto w = store::TableWriter<Row>::create(dir, table);
    SADDLESCOPE_CHECK(w.ok());
    for (const Row& r : *rows) w->append(r);
    SADDLESCOPE_CHECK(w->flush().ok());
    auto written = store::read_file(path);
    SADDLESCOPE_CHECK(written.ok());
    text = *written;
    auto back = store::read_table(dir, table);
    SADDLESCOPE_CHECK(back.ok() && back->size() == rows->size());
    *rows = std::move(*back);
  }
  SADDLESCOPE_CHECK(texts[0] == texts[1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string dir = fuzz::scratch_dir();
  const uint8_t* file = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 6) {
    case 0: round_trip(dir, store::kMetrics, file, n); break;
    case 1: round_trip(dir, store::kCurvature, file, n); break;
    case 2: round_trip(dir, store::kCurvatureEigen, file, n); break;
    case 3: round_trip(dir, store::kSymmetry, file, n); break;
    case 4: round_trip(dir, store::kOps, file, n); break;
    case 5: {
      fuzz::write_bytes(dir + "/any.csv", file, n);
      fuzz::check_one_line(store::read_csv(dir + "/any.csv").status());
      break;
    }
  }
  return 0;
}
