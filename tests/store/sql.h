// Reading a catalogue back in tests: the rows of a query as "a|b|c" strings, NULL as "NULL".
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

namespace saddlescope::testing {

inline std::vector<std::string> query(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK) << db_path;
  std::vector<std::string> rows;
  char* error = nullptr;
  sqlite3_exec(db, sql.c_str(),
               [](void* out, int n, char** vals, char**) {
                 std::string row;
                 for (int i = 0; i < n; ++i) row += (i ? "|" : "") + std::string(vals[i] ? vals[i] : "NULL");
                 static_cast<std::vector<std::string>*>(out)->push_back(row);
                 return 0;
               },
               &rows, &error);
  EXPECT_EQ(error, nullptr) << sql << ": " << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
  return rows;
}

// The single value of a one-row, one-column query ("" when there is no row).
inline std::string query_one(const std::string& db_path, const std::string& sql) {
  auto rows = query(db_path, sql);
  EXPECT_EQ(rows.size(), 1u) << sql;
  return rows.empty() ? "" : rows[0];
}

}  // namespace saddlescope::testing
