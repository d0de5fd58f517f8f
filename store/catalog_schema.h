// The catalogue's SQL schema (internal to store/; docs/catalog.md documents it for users).
//
// The row tables are generated from the Table<Row> declarations of schema.h — table name = file name
// without ".csv", a run_id column first, then the CSV's columns with their SQL type taken from the
// row member (int64_t and bool: INTEGER, double: REAL, std::string: TEXT). So the catalogue cannot
// disagree with the files about a column. The `runs` columns are listed once, in kRunColumns.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/schema.h"
#include "sqlite_db.h"

namespace saddlescope::store {

// The version of the catalogue's schema, in table meta (key 'version'). Version 1 was the catalogue
// before the meta table (a runs table only); an older catalogue is rebuilt, a newer one refused.
inline constexpr int kCatalogSchemaVersion = 4;
inline constexpr const char* kCatalogFormat = "saddlescope.catalog";

// Calls f(table, reader) for every CSV table of a run directory, `reader` being the RunDir member that
// reads it (&RunDir::metrics, ...). The one list of the run store's tables.
template <class F>
void for_each_table(F&& f) {
  f(kMetrics, &RunDir::metrics);
  f(kCurvature, &RunDir::curvature);
  f(kCurvatureEigen, &RunDir::curvature_eigen);
  f(kSymmetry, &RunDir::symmetry);
  f(kNoise, &RunDir::noise);
  f(kOpHash, &RunDir::ophash);
  f(kOps, &RunDir::ops);
}

// "metrics.csv" -> "metrics": the SQL table of a CSV file.
std::string sql_table_name(const char* file);

// One column of table `runs`: its name, SQL type, and where its value comes from — a JSON pointer
// into the manifest's JSON (RunManifest::to_json), or nullptr for the columns computed in
// catalog_rows.cpp (run_id, fingerprint_digest, manifest).
struct RunColumn {
  const char* name;
  const char* type;
  const char* pointer;
};
const std::vector<RunColumn>& run_columns();

// The SQL type of a row member: INTEGER (int64_t; bool as 0/1), REAL (double; NaN as NULL) or TEXT.
template <class Row>
const char* sql_type(const typename Table<Row>::Member& member) {
  return std::visit(
      [](auto m) -> const char* {
        using T = std::decay_t<decltype(std::declval<Row>().*m)>;
        if constexpr (std::is_same_v<T, double>) return "REAL";
        else if constexpr (std::is_same_v<T, std::string>) return "TEXT";
        else return "INTEGER";
      },
      member);
}

// "CREATE TABLE <name> (run_id TEXT NOT NULL, "<col>" <type>, ...); CREATE INDEX ...".
template <class Row>
std::string create_table_sql(const Table<Row>& table) {
  std::string name = sql_table_name(table.file);
  std::string sql = "CREATE TABLE " + name + " (run_id TEXT NOT NULL";
  for (const auto& c : table.columns) sql += ", \"" + std::string(c.name) + "\" " + sql_type<Row>(c.member);
  return sql + ");\nCREATE INDEX " + name + "_run_id ON " + name + " (run_id);\n";
}

// Every CREATE TABLE and CREATE INDEX of the catalogue (meta included, its rows not).
std::string catalogue_schema_sql();

// Inserts `rows` of one run into the table's SQL table, in one prepared statement.
template <class Row>
Status insert_rows(const Db& db, const Table<Row>& table, const std::string& run_id, const std::vector<Row>& rows) {
  std::string sql = "INSERT INTO " + sql_table_name(table.file) + " VALUES (?";
  for (size_t i = 0; i < table.columns.size(); ++i) sql += ",?";
  auto st = db.prepare(sql + ")");
  if (!st) return st.status();
  for (const Row& r : rows) {
    st->bind(1, run_id);
    int i = 2;
    for (const auto& c : table.columns)
      std::visit(
          [&](auto m) {
            if constexpr (std::is_same_v<std::decay_t<decltype(r.*m)>, bool>) st->bind(i++, int64_t{r.*m});
            else st->bind(i++, r.*m);
          },
          c.member);
    SADDLESCOPE_RETURN_IF_ERROR(st->run());
  }
  return Status::Ok();
}

}  // namespace saddlescope::store
