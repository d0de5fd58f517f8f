#include "sqlite_db.h"

#include <sqlite3.h>

#include <cmath>

#include "saddlescope/base/text.h"

namespace saddlescope::store {

Stmt::Stmt(Stmt&& other) noexcept : s_(other.s_), db_path_(std::move(other.db_path_)) { other.s_ = nullptr; }
Stmt::~Stmt() { sqlite3_finalize(s_); }

Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}
Stmt& Stmt::bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  if (std::isnan(v)) return bind_null(i);
  sqlite3_bind_double(s_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, const std::string& v) {
  sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::bind_json(int i, const nlohmann::json& v) {
  if (v.is_null()) return bind_null(i);
  if (v.is_boolean()) return bind(i, int64_t{v.get<bool>()});
  if (v.is_number_integer()) return bind(i, v.get<int64_t>());
  if (v.is_number()) return bind(i, v.get<double>());
  if (v.is_string()) return v.get_ref<const std::string&>().empty() ? bind_null(i) : bind(i, v.get<std::string>());
  return bind(i, v.dump());
}

Result<bool> Stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Status::Error(db_path_ + ": running '" + printable(sqlite3_sql(s_)) +
                       "': " + printable(sqlite3_errmsg(sqlite3_db_handle(s_))));
}

Status Stmt::run() {
  auto r = step();
  reset();
  return r ? Status::Ok() : r.status();
}

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

bool Stmt::is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
int64_t Stmt::int64(int col) const { return sqlite3_column_int64(s_, col); }
double Stmt::real(int col) const { return sqlite3_column_double(s_, col); }
std::string Stmt::text(int col) const {
  const unsigned char* t = sqlite3_column_text(s_, col);
  return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(s_, col)) : std::string();
}

Result<Db> Db::open(const std::string& path, bool create, bool read_only, int busy_ms) {
  sqlite3* db = nullptr;
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Error(path + ": cannot open: " + printable(why));
  }
  sqlite3_busy_timeout(db, busy_ms);
  return Db(path, db);
}

Db::Db(Db&& other) noexcept : path_(std::move(other.path_)), db_(other.db_) { other.db_ = nullptr; }
Db::~Db() { sqlite3_close(db_); }

Status Db::exec(const std::string& sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) == SQLITE_OK) return Status::Ok();
  std::string why = msg ? msg : sqlite3_errmsg(db_);
  sqlite3_free(msg);
  return Status::Error(path_ + ": running '" + sql.substr(0, sql.find('\n')) + "': " + printable(why));
}

Result<Stmt> Db::prepare(const std::string& sql) const {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
    return error("preparing '" + printable(sql) + "'");
  return Stmt(s, path_);
}

Status Db::close() {
  if (sqlite3_close(db_) != SQLITE_OK) return error("closing");
  db_ = nullptr;
  return Status::Ok();
}

Status Db::error(const std::string& what) const {
  // SQLite's message may quote the file's schema, newlines included: shown escaped, one line.
  return Status::Error(path_ + ": " + what + ": " + printable(sqlite3_errmsg(db_)));
}

std::string Db::damage() const {
  int rc = sqlite3_errcode(db_) & 0xff;  // the primary code of an extended one
  return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? printable(sqlite3_errmsg(db_)) : std::string();
}

}  // namespace saddlescope::store
