#include "catalog_schema.h"

#include <cstring>

namespace saddlescope::store {

std::string sql_table_name(const char* file) {
  const char* dot = std::strrchr(file, '.');
  return dot ? std::string(file, dot) : std::string(file);
}

// Same concept, same name as in the manifest: evaluation.mse is evaluation_mse, config.seed is seed.
// Execution axes and the other identity keys are columns of their own; everything else is in
// `manifest` for json_extract(). An empty string is stored as NULL (finished while running).
const std::vector<RunColumn>& run_columns() {
  static const std::vector<RunColumn> k = {
      {"run_id", "TEXT PRIMARY KEY", nullptr},  // the directory's name (= the manifest's run_id)
      {"status", "TEXT NOT NULL", "/status"},    // as written; stale is derived, not stored
      {"error", "TEXT", "/error"},
      {"stopped_by", "TEXT", "/stopped_by"},
      {"config_key", "TEXT", "/config_key"},
      {"model", "TEXT", "/config/model"},
      {"device", "TEXT", "/config/device"},
      {"threads", "INTEGER", "/config/threads"},
      {"dtype", "TEXT", "/config/dtype"},
      {"deterministic", "TEXT", "/config/deterministic"},
      {"cudnn", "INTEGER", "/config/cudnn"},
      {"cudnn_benchmark", "INTEGER", "/config/cudnn_benchmark"},
      {"cudnn_deterministic", "INTEGER", "/config/cudnn_deterministic"},
      {"tf32_matmul", "INTEGER", "/config/tf32_matmul"},
      {"tf32_cudnn", "INTEGER", "/config/tf32_cudnn"},
      {"cublas_workspace", "TEXT", "/config/cublas_workspace"},
      {"cuda_graph", "INTEGER", "/config/cuda_graph"},
      {"perturbation", "TEXT", "/config/perturbation"},
      {"perturbation_seed", "INTEGER", "/config/perturbation_seed"},
      {"init", "TEXT", "/config/init"},
      {"init_scale", "REAL", "/config/init_scale"},
      {"seed", "INTEGER", "/config/seed"},
      {"data_seed", "INTEGER", "/config/data_seed"},
      {"steps", "INTEGER", "/config/steps"},  // configured
      {"steps_completed", "INTEGER", "/steps_completed"},
      {"final_loss", "REAL", "/final_loss"},
      {"evaluation_mse", "REAL", "/evaluation/mse"},
      {"evaluation_baseline_mse", "REAL", "/evaluation/baseline_mse"},
      {"diverged_at_step", "INTEGER", "/diverged_at_step"},
      {"resumes", "INTEGER", "/resumes"},
      {"checkpoint_step", "INTEGER", "/checkpoint_step"},
      {"host", "TEXT", "/process/host"},
      {"pid", "INTEGER", "/process/pid"},
      {"fingerprint_digest", "TEXT", nullptr},  // SHA-256 of the fingerprint's JSON dump
      {"started", "TEXT", "/timings/started"},
      {"finished", "TEXT", "/timings/finished"},
      {"train_s", "REAL", "/timings/train_s"},
      {"manifest", "TEXT NOT NULL", nullptr},  // the whole manifest as JSON text
  };
  return k;
}

std::string catalogue_schema_sql() {
  std::string sql = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);\nCREATE TABLE runs (";
  const char* sep = "";
  for (const RunColumn& c : run_columns()) {
    sql += sep + std::string(c.name) + " " + c.type;
    sep = ", ";
  }
  sql += ");\nCREATE INDEX runs_config_key ON runs (config_key);\n";
  for_each_table([&](const auto& table, auto) { sql += create_table_sql(table); });
  sql += "CREATE TABLE problems (run_id TEXT NOT NULL, file TEXT NOT NULL, error TEXT NOT NULL);\n"
         "CREATE INDEX problems_run_id ON problems (run_id);\n"
         "CREATE TABLE sources (run_id TEXT NOT NULL, file TEXT NOT NULL, bytes INTEGER NOT NULL, "
         "mtime_ns INTEGER NOT NULL, PRIMARY KEY (run_id, file));\n";
  return sql;
}

}  // namespace saddlescope::store
