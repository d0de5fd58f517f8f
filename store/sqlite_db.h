// A thin owner of an SQLite connection and its prepared statements (internal to store/): every error
// names the database file and what was being done, with SQLite's own message.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "saddlescope/base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace saddlescope::store {

class Stmt {
 public:
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&&) = delete;
  ~Stmt();

  // Parameters are numbered from 1. A NaN binds as NULL (SQLite has no NaN).
  Stmt& bind_null(int i);
  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, double v);
  Stmt& bind(int i, const std::string& v);  // copied
  // A JSON scalar by its type: null -> NULL, bool -> 0/1, integer, number, string ("" -> NULL);
  // an array or object as its JSON text.
  Stmt& bind_json(int i, const nlohmann::json& v);

  // Runs the statement one step: true when it produced a row, false when done. The error names the
  // database and `sql`.
  Result<bool> step();
  // Steps to completion (an INSERT, UPDATE, DELETE) and resets for the next bindings.
  Status run();
  // Steps through every row, calling `row()` at each (it reads the columns), then resets.
  template <class F>
  Status each_row(F row) {
    for (;;) {
      auto more = step();
      if (!more) return more.status();
      if (!*more) break;
      row();
    }
    reset();
    return Status::Ok();
  }
  void reset();

  bool is_null(int col) const;  // columns are numbered from 0
  int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;

 private:
  friend class Db;
  Stmt(sqlite3_stmt* s, std::string db_path) : s_(s), db_path_(std::move(db_path)) {}
  sqlite3_stmt* s_;
  std::string db_path_;  // for errors
};

class Db {
 public:
  // Opens `path` read-write, creating it when `create`; or read-only when `read_only`. A busy timeout
  // of `busy_ms` lets it wait for a reader or writer in another process instead of failing at once.
  static Result<Db> open(const std::string& path, bool create, bool read_only = false, int busy_ms = 30000);
  Db(Db&& other) noexcept;
  Db& operator=(Db&&) = delete;
  ~Db();

  // Runs one or more statements that return no rows.
  Status exec(const std::string& sql);
  Result<Stmt> prepare(const std::string& sql) const;
  // Closes now, reporting an error (the destructor closes silently).
  Status close();

  // "<path>: <what>: <SQLite's message>".
  Status error(const std::string& what) const;
  // SQLite's message when the last call on this connection failed because the file is damaged
  // (SQLITE_CORRUPT, SQLITE_NOTADB), else "". Ask right after the failing call: the next call resets it.
  std::string damage() const;
  const std::string& path() const { return path_; }

 private:
  Db(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  std::string path_;
  sqlite3* db_;
};

}  // namespace saddlescope::store
