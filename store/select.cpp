#include "saddlescope/store/select.h"

#include <fmt/format.h>

#include "saddlescope/base/text.h"
#include "catalog_schema.h"
#include "saddlescope/store/csv.h"

namespace saddlescope::store {
namespace {

std::string format(int64_t v) { return std::to_string(v); }
std::string format(double v) { return format_double(v); }
std::string format(const std::string& v) { return v; }
std::string format(bool v) { return v ? "1" : "0"; }

template <class Row>
Result<std::string> select_from(const RunDir& run, const Table<Row>& table,
                                Result<std::vector<Row>> (RunDir::*reader)() const,
                                const std::vector<std::string>& wanted) {
  std::vector<const typename Table<Row>::Column*> picked;
  for (const auto& name : wanted.empty() ? table.names() : wanted) {
    const typename Table<Row>::Column* found = nullptr;
    for (const auto& c : table.columns)
      if (name == c.name) found = &c;
    if (!found) {
      std::string have;
      for (const auto& n : table.names()) have += (have.empty() ? "" : ", ") + n;
      return Status::Error(fmt::format("{}: no column '{}' (its columns: {})", table.file, name, have));
    }
    picked.push_back(found);
  }
  auto rows = (run.*reader)();
  if (!rows) return rows.status();
  std::string out;
  for (size_t i = 0; i < picked.size(); ++i) out += (i ? "," : "") + std::string(picked[i]->name);
  out += "\n";
  for (const Row& r : *rows) {
    for (size_t i = 0; i < picked.size(); ++i) {
      if (i) out += ",";
      std::visit([&](auto m) { out += format(r.*m); }, picked[i]->member);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

Result<std::string> select_columns(const RunDir& run, const std::string& file, const std::vector<std::string>& columns) {
  std::string want = ends_with(file, ".csv") ? file : file + ".csv";
  std::optional<Result<std::string>> out;
  std::string tables;
  for_each_table([&](const auto& table, auto reader) {
    tables += (tables.empty() ? "" : ", ") + std::string(table.file);
    if (want == table.file) out = select_from(run, table, reader, columns);
  });
  if (!out) return Status::Error("'" + file + "' is not a table of the run store (tables: " + tables + ")");
  return std::move(*out);
}

}  // namespace saddlescope::store
